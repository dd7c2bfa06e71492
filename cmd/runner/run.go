package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/planrunner/runner/agents"
	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/engine"
	"github.com/planrunner/runner/plans"
	"github.com/planrunner/runner/steps"
	"github.com/rs/zerolog"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func cmdRun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("run", stderr)
	vars := plans.VarArgs{}
	fs.Var(vars, "var", "set a plan var: name=value (repeatable)")
	agentsFlag := plans.AgentOverrides{}
	fs.Var(agentsFlag, "agent", "NAME.FIELD=VALUE: change an agent's provider, model, base_url or api_key_env for this run (repeatable)")
	workdir := fs.String("workdir", "", "directory steps run in (default: the current directory)")
	out := fs.String("out", "", "where to write blackboard.json (default: WORKDIR/.runner/runs/<run-id>/blackboard.json)")
	dry := fs.Bool("dry-run", false, "print what would run, run nothing")
	syncFlag := fs.Bool("sync", false, "fsync the journal after every step (survives power loss, not only kill -9)")
	var ru reuseFlags
	fs.Var(&ru.from, "reuse", "OLD/blackboard.json: take each model answer from this run's recording while the request is byte for byte the recorded one (repeatable)")
	fs.BoolVar(&ru.offline, "offline", false, "with --reuse: take command, test and apply_diff results from the recording too, run nothing")
	fs.BoolVar(&g.output, "show-output", false, "stream command and test output as it comes, each line prefixed by its step's label")
	fs.BoolVar(&g.report, "report", false, "write the run's HTML report (report.html beside blackboard.json) when it ends")
	tf := addTemporalFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(stderr, fs, "want one plan file, got %d arguments", len(pos))
	}
	prog, err := engine.Load(pos[0], steps.Registry())
	if err != nil {
		return planErrors(stderr, prog, err)
	}
	if err := prog.Plan.Override(agentsFlag); err != nil {
		fmt.Fprintf(stderr, "runner run: %v\n", err)
		return exitUsage
	}
	resolved, err := engine.ResolveVars(prog.Plan, vars)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	if *dry {
		dryRun(stdout, prog, resolved)
		return exitOK
	}
	wd, err := resolveWorkdir(*workdir)
	if err != nil {
		return usageErr(stderr, fs, "%v", err)
	}
	switch tf.engine {
	case "local":
	case "temporal":
		if ru.offline {
			return usageErr(stderr, fs, "--offline is not available with --engine temporal (a replay runs nothing: use it without --engine)")
		}
		pass := append(tf.args(), "--workdir", wd)
		for _, p := range ru.from {
			pass = append(pass, "--reuse", p)
		}
		for _, a := range agentsFlag.Args() {
			pass = append(pass, "--agent", a)
		}
		for k, v := range vars {
			pass = append(pass, "--var", k+"="+v)
		}
		if *out != "" {
			pass = append(pass, "--out", *out)
		}
		return runOnTemporal(prog, pos[0], pass, g, stdout, stderr)
	default:
		return usageErr(stderr, fs, "--engine %q: want local or temporal", tf.engine)
	}
	now := time.Now().UTC()
	runID := board.NewID(now)
	g.runID = runID
	log, set, code := g.setup(prog.Plan, fs, stderr)
	if code != exitOK {
		return code
	}
	if code := ru.load(set, fs, stderr); code != exitOK {
		return code
	}
	path := *out
	if path == "" {
		path = filepath.Join(wd, ".runner", "runs", runID, "blackboard.json")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		fmt.Fprintf(stderr, "runner run: %v\n", err)
		return exitFailed
	}
	lock, err := ownRun(path)
	if err != nil {
		fmt.Fprintf(stderr, "runner run: %v\n", err)
		return exitUsage
	}
	defer lock.Unlock()
	planPath, _ := filepath.Abs(pos[0])
	b, err := board.Create(path, board.Run{ID: runID, PlanPath: planPath, PlanSHA256: prog.Plan.SHA256,
		PlanSource: string(prog.Plan.Source), Vars: resolved, Workdir: wd, Status: board.StatusRunning,
		StartedAt: now, RunnerVersion: version, Agents: agentsFlag.Saved()}, board.Options{Sync: *syncFlag, Redact: g.mask.String})
	if err != nil {
		fmt.Fprintf(stderr, "runner run: %v\n", err)
		return exitFailed
	}
	defer b.Close()
	defer serveRun(b, lock, prog.Plan, wd, stderr)()
	r := &engine.Runner{Prog: prog, Board: b, Log: log, Workdir: wd, Vars: resolved, Agents: set, Script: ru.script(prog)}
	code = execute(r, stdout, stderr, g)
	ru.report(b, stderr, g)
	return code
}

// execute runs r with Ctrl-C handling and progress, and maps the outcome
// to an exit code. run and resume share it.
func execute(r *engine.Runner, stdout, stderr io.Writer, g *globals) int {
	start := time.Now()
	if g.output {
		showOutput(r, stderr, g)
	}
	err := runEngine(context.Background(), r, g.view)
	finish(r, err, start, stdout, stderr, g)
	return exitCode(err)
}

// runEngine runs r until it ends; SIGINT or SIGTERM interrupts it.
func runEngine(ctx context.Context, r *engine.Runner, view *progressView) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		r.Log.Warn().Msg("interrupted: stopping running steps, saving the board (Ctrl-C again to quit at once)")
		cancel(engine.ErrInterrupted)
		if _, ok := <-sigs; ok {
			os.Exit(exitInterrupted) // every finished step is already in the journal
		}
	}()
	if view != nil {
		r.Observer = observers(view, r.Observer)
	}
	err := r.Run(ctx)
	if view != nil {
		view.close()
	}
	return err
}

func exitCode(err error) int {
	var re *engine.RunError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &re) && re.Status == engine.StatusInterrupted:
		return exitInterrupted
	case errors.As(err, &re) && re.Status == engine.StatusWaiting:
		return exitWaiting
	}
	return exitFailed
}

// multiObserver tells several observers.
type multiObserver []engine.Observer

func observers(list ...engine.Observer) engine.Observer {
	var m multiObserver
	for _, o := range list {
		if o != nil {
			m = append(m, o)
		}
	}
	if len(m) == 1 {
		return m[0]
	}
	return m
}

func (m multiObserver) StepStarted(label string, visit int, parent string) {
	for _, o := range m {
		o.StepStarted(label, visit, parent)
	}
}

func (m multiObserver) StepFinished(rec board.StepRecord) {
	for _, o := range m {
		o.StepFinished(rec)
	}
}

func resolveWorkdir(dir string) (string, error) {
	if dir == "" {
		return os.Getwd()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return "", fmt.Errorf("--workdir %s: not a directory", dir)
	}
	return abs, nil
}

// setup makes the logger and the plan's agent set; a missing API key ends
// here, before the first step (exit 2).
func (g *globals) setup(p *plans.Plan, fs *flag.FlagSet, stderr io.Writer) (zerolog.Logger, *agents.Set, int) {
	log, err := g.logger(stderr, g.progress(stderr))
	if err != nil {
		return log, nil, usageErr(stderr, fs, "%v", err)
	}
	g.view.setPlan(p)
	g.learnSecrets(p)
	set, err := agents.New(p, agents.Options{Log: log, Mask: g.mask})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return log, nil, exitUsage
	}
	return log, set, exitOK
}

// progress reports whether steps are shown as they finish: with console
// logs, unless -q.
func (g *globals) progress(stderr io.Writer) bool {
	return !g.quiet && g.format(stderr) == "console"
}

func cmdVersion(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, _ := newFlags("version", stderr)
	if _, err := parse(fs, args); err != nil {
		return flagErr(err)
	}
	fmt.Fprintf(stdout, "runner %s\n", version)
	return exitOK
}

// learnSecrets tells the mask the values of the plan's secret variables
// (its secrets, the providers' key variables): from here on they are
// masked in logs, the board and the final error line. Agents add the keys
// they read themselves.
func (g *globals) learnSecrets(p *plans.Plan) {
	for _, n := range p.SecretNames() {
		g.mask.Add(os.Getenv(n))
	}
}

// printSpend shows what each agent's model calls used and cost.
func printSpend(w io.Writer, spend []agents.AgentSpend) {
	for _, sp := range spend {
		cost := fmt.Sprintf("$%.4f", sp.CostUSD)
		if sp.CostUSD < 0.01 {
			cost = fmt.Sprintf("$%.6f", sp.CostUSD) // a cheap model's call costs millionths
		}
		if !sp.PriceKnown {
			cost += " (price of its model unknown; give the agent a price)"
		}
		fmt.Fprintf(w, "  agent %s: %d calls, %d input + %d output tokens, %s\n", sp.Agent, sp.Calls, sp.InputTokens, sp.OutputTokens, cost)
	}
}

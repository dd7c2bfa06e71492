package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/view/ghactions"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func cmdRun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("run", stdout, stderr)
	vars, agentsFlag := plans.VarArgs{}, plans.AgentOverrides{}
	o := runs.Options{Vars: vars, Agents: agentsFlag, Version: version}
	fs.Var(vars, "var", "set a plan var: name=value (repeatable)")
	fs.Var(agentsFlag, "agent", "NAME.FIELD=VALUE: change an agent's provider, model, base_url, api_key_env, api, stream or reasoning_effort for this run (repeatable)")
	fs.StringVar(&o.Workdir, "workdir", "", "directory steps run in (default: the current directory)")
	fs.StringVar(&o.Board, "out", "", "where to write blackboard.json (default: WORKDIR/.runner/runs/<run-id>/blackboard.json)")
	dry := fs.Bool("dry-run", false, "print what would run, run nothing")
	var env runs.Env
	fs.BoolVar(&env.Sync, "sync", false, "fsync the journal after every step (survives power loss, not only kill -9)")
	var reuse stringList
	fs.Var(&reuse, "reuse", "OLD/blackboard.json: take each model answer from this run's recording while the request is byte for byte the recorded one (repeatable)")
	fs.BoolVar(&o.Offline, "offline", false, "with --reuse: take the results of steps that touch the world (command, test, apply_diff, ...) from the recording too, run nothing")
	fs.BoolVar(&g.output, "show-output", false, "stream command and test output as it comes, each line prefixed by its step's label")
	fs.BoolVar(&g.report, "report", false, "write the run's HTML report (report.html beside blackboard.json) when it ends")
	fs.StringVar(&g.junit, "junit", "", "write the run's tests and steps as JUnit XML to `FILE` when it ends (as runner report --format junit)")
	addTraceFlag(fs, g)
	var tf runs.Temporal
	engineFlag := addTemporalFlags(fs, &tf)
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(stderr, fs, "want one plan file, got %d arguments", len(pos))
	}
	o.Plan, o.Reuse = pos[0], reuse
	r, err := runs.New(o)
	if err != nil {
		return runErr(stderr, fs.Name(), err)
	}
	if *dry {
		dryRun(stdout, r.Prog, r.Vars)
		if len(r.Prog.Plan.Agents) > 0 {
			dir := o.Workdir
			if dir == "" {
				dir = "."
			}
			worstCost(stdout, r.Prog.Plan, r.Vars, dir)
		}
		r.Close()
		return exitOK
	}
	switch *engineFlag {
	case "local":
	case "temporal":
		return runOnTemporal(r, tf, g, stdout, stderr)
	default:
		return usageErr(stderr, fs, "--engine %q: want local or temporal", *engineFlag)
	}
	return execute(r, env, fs, stdout, stderr, g, o.Workdir != "")
}

// execute runs r with Ctrl-C handling and progress, tells how it ended,
// and maps the outcome to an exit code. run and resume share it.
//
// workdirGiven: the workdir was chosen (--workdir, a resumed run's), so
// which it is goes without saying.
func execute(r *runs.Run, env runs.Env, fs *flag.FlagSet, stdout, stderr io.Writer, g *globals, workdirGiven bool) int {
	if onActions() {
		// On GitHub Actions nothing a step or a model wrote may be read as
		// a workflow command: the whole run's stderr is under
		// stop-commands, and runner's own commands (groups, annotations)
		// go through the same stream.
		g.gh = ghactions.NewStream(stderr, g.mask.String)
		defer g.gh.Close()
		stderr = g.gh
	}
	log, err := g.logger(stderr, g.progress(stderr))
	if err != nil {
		r.Close()
		return usageErr(stderr, fs, "%v", err)
	}
	if env.Budgets, err = userBudgets(); err != nil {
		r.Close()
		return planErrors(stderr, "runner run", nil, err)
	}
	g.view.setPlan(r.Prog.Plan)
	env.Log, env.Mask, env.Warnings = log, g.mask, stderr
	if g.view != nil {
		env.Observer = g.view
		if g.view.live {
			env.OnStream = g.view.streamed
		}
	}
	if g.output {
		env.Output = showOutput(log.With().Str("run", r.Record.ID).Logger(), stderr, g)
	}
	// Said at the start, not only at the end: a live run can be found
	// (`runner board PATH watch`, `runner runs`) while it runs.
	log.Info().Str("run", r.Record.ID).Str("blackboard", r.Board).Msg("run started")
	if g.view != nil && !g.quiet { // the display shows no info events
		fmt.Fprintf(g.view, "run %s → %s\n", r.Record.ID, r.Board)
	}
	if note := workdirNote(r.Prog.Plan.Path, r.Record.Workdir, workdirGiven); note != "" {
		if g.view != nil && !g.quiet {
			fmt.Fprintln(g.view, note)
		} else {
			log.Info().Str("workdir", r.Record.Workdir).Msg(note)
		}
	}
	ctx, stop := interruptible(context.Background(), log.Warn)
	defer stop()
	start := time.Now()
	res, err := r.Execute(ctx, env)
	g.view.close()
	if err != nil {
		return resumeErr(stderr, fs.Name(), err)
	}
	finish(res, start, stdout, stderr, g)
	traceRun(res.Board.Path(), g, stderr)
	if res.Reused != nil && !g.quiet {
		st := res.Reused
		fmt.Fprintf(stderr, "reused %d model calls (%d tokens) from the recording; %d went live (%d tokens)\n",
			st.ReusedCalls, st.ReusedTokens, st.LiveCalls, st.LiveTokens)
	}
	return exitCode(res.Err)
}

// runErr prints why a run could not start: a plan's problems as
// validate does, else one line; a usage error exits 2, the rest 1.
func runErr(stderr io.Writer, cmd string, err error) int {
	var pe *runs.PlanError
	if errors.As(err, &pe) {
		return planErrors(stderr, "runner run", pe.Prog, pe.Err)
	}
	fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
	if runs.IsUsage(err) {
		return exitUsage
	}
	return exitFailed
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

func cmdVersion(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, _ := newFlags("version", stdout, stderr)
	if _, err := parse(fs, args); err != nil {
		return flagErr(err)
	}
	fmt.Fprintf(stdout, "runner %s\n", version)
	return exitOK
}

// learnSecrets tells the mask the values of the plan's secret variables:
// from here on they are masked in logs and the final error line.
func (g *globals) learnSecrets(p *plans.Plan) { runs.LearnSecrets(g.mask, p) }

// printSpend shows what each agent's model calls used and cost.
func printSpend(w io.Writer, spend []agents.AgentSpend) {
	for _, sp := range spend {
		cost := board.FormatUSD(sp.CostUSD)
		if !sp.PriceKnown {
			cost += " (price of its model unknown; give the agent a price)"
		}
		cache := ""
		if sp.CacheReadTokens+sp.CacheWriteTokens > 0 {
			cache = fmt.Sprintf(" (cache: %d read, %d written, saved %s)", sp.CacheReadTokens, sp.CacheWriteTokens, board.FormatUSD(sp.CacheSavedUSD))
		}
		reasoning := ""
		if sp.ReasoningTokens > 0 {
			reasoning = fmt.Sprintf(" (%d reasoning)", sp.ReasoningTokens)
		}
		fmt.Fprintf(w, "  agent %s: %d calls, %d input%s + %d output%s tokens, %s\n", sp.Agent, sp.Calls, sp.InputTokens, cache, sp.OutputTokens, reasoning, cost)
	}
}

// progress reports whether steps are shown as they finish: with console
// logs, unless -q.
func (g *globals) progress(stderr io.Writer) bool {
	return !g.quiet && g.format(stderr) == "console"
}

// workdirNote says once, at the start, which workdir a run uses when a
// newcomer could expect another: none was given, the plan file is not
// under it, and the plan names workdir-relative paths (a dir:, a
// diff_file:, files() or read_file()), which would resolve in the current
// directory rather than beside the plan.
func workdirNote(planPath, workdir string, given bool) string {
	if given || planPath == "" {
		return ""
	}
	abs, err := filepath.Abs(planPath)
	if err != nil {
		return ""
	}
	if rel, err := filepath.Rel(workdir, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return ""
	}
	src, err := os.ReadFile(abs)
	if err != nil || !relativePaths.Match(src) {
		return ""
	}
	return fmt.Sprintf("workdir: %s (dir:, diff_file:, files() and read_file() are relative to it, not to the plan's directory %s; --workdir DIR to change it)",
		workdir, filepath.Dir(abs))
}

var relativePaths = regexp.MustCompile(`\b(dir|diff_file):|\b(files|read_file)\(`)

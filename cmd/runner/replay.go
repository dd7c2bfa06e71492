package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/planrunner/runner/agents"
	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/engine"
	"github.com/planrunner/runner/steps"
	"github.com/rs/zerolog"
)

// localTypes are the step types whose results depend on the world outside
// the board (files, processes). A replay runs them for real in --workdir,
// or serves their recorded results with --offline. Every other step type
// is a function of the board and the model answers, and always runs.
var localTypes = map[string]bool{"command": true, "test": true, "apply_diff": true}

type replayOpts struct {
	recording string
	plan      string
	workdir   string
	offline   bool
	from      string
	out       string
	models    map[string]string // agent -> model, for the live part of a fork
}

func cmdReplay(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("replay", stderr)
	var o replayOpts
	fs.StringVar(&o.plan, "plan", "", "replay this plan (a changed one) against the recording instead of the recorded plan")
	fs.StringVar(&o.workdir, "workdir", "", "run command, test and apply_diff steps for real in DIR")
	fs.BoolVar(&o.offline, "offline", false, "serve command, test and apply_diff results from the recording too: no tools, no files")
	fs.StringVar(&o.from, "from", "", "LABEL[#VISIT]: replay up to this step visit, then go on live with the real providers (a fork)")
	fs.StringVar(&o.out, "out", "", "where to write the replay's blackboard.json (default: replay-<id>.json beside the recording)")
	models := agentModels{}
	fs.Var(models, "agent", "NAME.model=MODEL: use another model for the live part of a fork (repeatable)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(stderr, fs, "want one blackboard.json, got %d arguments", len(pos))
	}
	o.recording, o.models = pos[0], models
	switch {
	case o.workdir == "" && !o.offline:
		return usageErr(stderr, fs, "command, test and apply_diff steps need a place to run: give --workdir DIR to run them for real there, or --offline to take their results from the recording")
	case o.from != "" && o.workdir == "":
		return usageErr(stderr, fs, "--from goes live after %s: give --workdir DIR for the steps that run from there on", o.from)
	case len(models) > 0 && o.from == "":
		return usageErr(stderr, fs, "--agent changes the model of the live part of a fork: it needs --from")
	}
	log, err := g.logger(stderr, g.progress(stderr))
	if err != nil {
		return usageErr(stderr, fs, "%v", err)
	}
	return replay(o, g, log, stdout, stderr)
}

// agentModels collects --agent NAME.model=MODEL.
type agentModels map[string]string

func (a agentModels) String() string { return "" }

func (a agentModels) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	name, field, ok2 := strings.Cut(k, ".")
	if !ok || !ok2 || name == "" || v == "" || field != "model" {
		return fmt.Errorf("want NAME.model=MODEL, got %q", s)
	}
	a[name] = v
	return nil
}

// fork says which step visit a replay goes live at.
type fork struct {
	label string
	visit int
	live  atomic.Bool // set once that visit starts
	agents.ReplaySource
}

func parseFrom(s string) (string, int, error) {
	label, v, hasVisit := strings.Cut(s, "#")
	visit := 1
	if hasVisit {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return "", 0, fmt.Errorf("--from %s: the visit after # must be a number from 1", s)
		}
		visit = n
	}
	return label, visit, nil
}

func (f *fork) Live(label string, visit int) bool { return f.live.Load() }

func replay(o replayOpts, g *globals, log zerolog.Logger, stdout, stderr io.Writer) int {
	saved, err := board.Load(o.recording)
	if err != nil {
		fmt.Fprintf(stderr, "runner replay: %v\n", err)
		return exitUsage
	}
	rec := saved.Run()
	planPath, src := rec.PlanPath, []byte(rec.PlanSource)
	if o.plan != "" {
		if src, err = os.ReadFile(o.plan); err != nil {
			fmt.Fprintf(stderr, "runner replay: %v\n", err)
			return exitUsage
		}
		planPath, _ = filepath.Abs(o.plan)
	}
	prog, err := engine.Compile(planPath, src, steps.Registry())
	if err != nil {
		return planErrors(stderr, prog, err)
	}
	var fk *fork
	source := agents.FromRecordings(saved.Recordings())
	if o.from != "" {
		label, visit, err := parseFrom(o.from)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return exitUsage
		}
		if prog.Node(label) == nil {
			fmt.Fprintf(stderr, "runner replay: --from %s: the plan has no step %q\n", o.from, label)
			return exitUsage
		}
		fk = &fork{label: label, visit: visit, ReplaySource: source}
		source = fk
		for name := range o.models {
			if prog.Plan.Agent(name) == nil {
				fmt.Fprintf(stderr, "runner replay: --agent %s: the plan has no agent %q\n", name, name)
				return exitUsage
			}
		}
	}
	g.learnSecrets(prog.Plan)
	set, err := agents.New(prog.Plan, agents.Options{Log: log, Replay: source, Mask: g.mask})
	if err != nil {
		fmt.Fprintf(stderr, "runner replay: %v\n", err)
		return exitUsage
	}
	for name, model := range o.models {
		if a, ok := set.Agent(name); ok {
			a.LiveModel = model
		}
	}
	workdir := rec.Workdir // what run.workdir said when the recording was made
	if o.workdir != "" {
		if workdir, err = resolveWorkdir(o.workdir); err != nil {
			fmt.Fprintf(stderr, "runner replay: %v\n", err)
			return exitUsage
		}
	}
	out := o.out
	if out == "" {
		out = filepath.Join(filepath.Dir(o.recording), "replay-"+board.NewID(time.Now())+".json")
	}
	run := rec
	run.PlanPath, run.PlanSHA256, run.PlanSource = planPath, prog.Plan.SHA256, string(src)
	run.Workdir, run.Status, run.Error, run.FinishedAt = workdir, board.StatusRunning, "", nil
	run.StartedAt, run.RunnerVersion, run.ReplayOf = time.Now().UTC(), version, o.recording
	b, err := board.Create(out, run, board.Options{Redact: g.mask.String})
	if err != nil {
		fmt.Fprintf(stderr, "runner replay: %v\n", err)
		return exitFailed
	}
	defer b.Close()

	chk := newChecker(saved, fk)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	chk.stop = cancel
	r := &engine.Runner{Prog: prog, Board: b, Log: log, Workdir: workdir,
		Vars: engine.SavedVars(prog.Plan, rec.Vars), Agents: set,
		Observer: chk, Sleep: noSleep}
	r.Recorded = func(label string, visit int) (board.StepRecord, bool) {
		n := prog.Node(label)
		if !o.offline || chk.isLive() || n == nil || !localTypes[n.Type] {
			return board.StepRecord{}, false
		}
		return chk.saved(label, visit)
	}
	r.Order = func(group string, visit int) ([]string, bool) {
		if chk.isLive() {
			return nil, false
		}
		return chk.groupOrder(group, visit), true
	}
	start := time.Now()
	runErr := runEngine(ctx, r, g.view)
	div := chk.verdict(runErr, b)
	fmt.Fprintf(stdout, "blackboard: %s\n", out)
	if div != "" {
		fmt.Fprint(stderr, div)
		return exitDiverged
	}
	if fk != nil && fk.live.Load() {
		report(r, runErr, start, io.Discard, stderr, g)
		return exitCode(runErr)
	}
	if !g.quiet {
		fmt.Fprintf(stderr, "replay of run %s matched the recording: %d steps, %d entries, %d model answers from the recording, in %s\n",
			rec.ID, len(b.Steps()), b.Len(), len(b.Recordings()), time.Since(start).Round(time.Millisecond))
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "the run failed as recorded: %v\n", runErr)
	}
	return exitCode(runErr)
}

// noSleep skips retry backoffs: a replay reproduces results, not waiting.
func noSleep(ctx context.Context, d time.Duration) error { return ctx.Err() }

var errDiverged = errors.New("replay diverged")

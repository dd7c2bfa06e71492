package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/runs"
	"github.com/rs/zerolog"
)

type replayOpts struct {
	recording string
	plan      string
	workdir   string
	offline   bool
	json      bool
	opt       replay.Options
}

func cmdReplay(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("replay", stdout, stderr)
	var o replayOpts
	fs.StringVar(&o.plan, "plan", "", "replay this plan (a changed one) against the recording instead of the recorded plan")
	fs.StringVar(&o.workdir, "workdir", "", "run the steps that touch the world (command, test, apply_diff, ...) for real in DIR")
	fs.BoolVar(&o.offline, "offline", false, "serve the results of steps that touch the world (command, test, apply_diff, ...) from the recording too: no tools, no files")
	fs.StringVar(&o.opt.From, "from", "", "LABEL[#VISIT]: replay up to this step visit, then go on live with the real providers (a fork)")
	fs.StringVar(&o.opt.Out, "out", "", "where to write the replay's blackboard.json (default: replay-<id>.json beside the recording; a fork: <id>/blackboard.json, a run of its own beside the recording's run)")
	fs.BoolVar(&o.json, "json", false, "print the outcome (and the first divergence) as JSON on stdout, for tools")
	addTraceFlag(fs, g)
	models := agentModels{}
	fs.Var(models, "agent", "NAME.model=MODEL: use another model for the live part of a fork (repeatable)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(stderr, fs, "want one blackboard.json, got %d arguments", len(pos))
	}
	if pos[0], err = runs.Resolve(pos[0], "."); err != nil {
		return usageErr(stderr, fs, "%v", err)
	}
	o.recording, o.opt.Models = pos[0], models
	switch {
	case o.workdir == "" && !o.offline:
		return usageErr(stderr, fs, "steps that touch the world (command, test, apply_diff, ...) need a place to run: give --workdir DIR to run them for real there, or --offline to take their results from the recording")
	case len(models) > 0 && o.opt.From == "":
		return usageErr(stderr, fs, "--agent changes the model of the live part of a fork: it needs --from")
	}
	log, err := g.logger(stderr, g.progress(stderr))
	if err != nil {
		return usageErr(stderr, fs, "%v", err)
	}
	o.opt.Log, o.opt.Version = log, version
	return runReplay(o, g, stdout, stderr)
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

// replayOutcome is what --json prints.
type replayOutcome struct {
	Recording  string             `json:"recording"`
	Blackboard string             `json:"blackboard"`
	Matched    bool               `json:"matched"`
	Status     string             `json:"status"` // how the replayed run ended
	Error      string             `json:"error,omitempty"`
	Ended      string             `json:"ended,omitempty"`
	Live       bool               `json:"live,omitempty"`
	Divergence *replay.Divergence `json:"divergence,omitempty"`
	// Outside are the writes from outside the run made again, and where.
	Outside []replay.OutsideWrite `json:"outside,omitempty"`
}

func runReplay(o replayOpts, g *globals, stdout, stderr io.Writer) int {
	ro := runs.ReplayOptions{Options: o.opt, PlanFile: o.plan, WorkdirPath: o.workdir, Mask: g.mask}
	if g.view != nil {
		ro.Observer = g.view
	}
	ctx, stop := interruptible(context.Background(), o.opt.Log.Warn)
	defer stop()
	start := time.Now()
	rep, err := runs.Replay(ctx, o.recording, ro)
	g.view.close()
	if err != nil {
		return runErr(stderr, "runner replay", err)
	}
	defer func() {
		rep.Board.Close() // saved whole before runner-otel reads it
		traceRun(rep.Board.Path(), g, stderr)
	}()
	saved := rep.Recorded
	code := exitCode(rep.RunErr)
	if errors.Is(rep.RunErr, engine.ErrEnded) {
		code = exitOK
	}
	if rep.Divergence != nil {
		code = exitDiverged
	}
	if o.json {
		out := replayOutcome{Recording: o.recording, Blackboard: rep.Board.Path(), Matched: rep.Matched(),
			Status: rep.Board.Run().Status, Ended: rep.Ended, Live: rep.Live, Divergence: rep.Divergence, Outside: rep.Outside}
		if rep.RunErr != nil {
			out.Error = rep.RunErr.Error()
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out)
	} else {
		fmt.Fprintf(stdout, "blackboard: %s\n", rep.Board.Path())
	}
	switch {
	case rep.Divergence != nil:
		if !o.json {
			fmt.Fprint(stderr, rep.Divergence.String())
		}
	case rep.Live:
		if !g.quiet {
			fmt.Fprintf(stderr, "fork of run %s went live at %s; it %s in %s\n", saved.ID, o.opt.From,
				rep.Board.Run().Status, time.Since(start).Round(time.Millisecond))
		}
		if rep.RunErr != nil {
			fmt.Fprintf(stderr, "error: %v\n", rep.RunErr)
		}
	default:
		if !g.quiet {
			upTo := ""
			if rep.Ended != "" {
				upTo = " up to where it ends, before " + rep.Ended
			}
			fmt.Fprintf(stderr, "replay of run %s matched the recording%s: %d steps, %d entries, %d model answers from the recording, in %s\n",
				saved.ID, upTo, len(rep.Board.Steps()), rep.Board.Len(), rep.Answers, time.Since(start).Round(time.Millisecond))
			if len(rep.Outside) > 0 {
				fmt.Fprintf(stderr, "outside writes made again: %s\n", replay.Describe(rep.Outside))
			}
		}
		if rep.RunErr != nil && rep.Ended == "" {
			fmt.Fprintf(stderr, "the run failed as recorded: %v\n", rep.RunErr)
		}
	}
	return code
}

// interruptible is ctx canceled by SIGINT or SIGTERM with
// engine.ErrInterrupted; a second signal quits at once.
func interruptible(ctx context.Context, warn func() *zerolog.Event) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	sigs := make(chan os.Signal, 2)
	// SIGHUP: the terminal or ssh session went away; stop as for Ctrl-C,
	// saved and resumable, rather than die mid-step.
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		warn().Msg("interrupted: stopping running steps, saving the board (Ctrl-C again to quit at once)")
		cancel(engine.ErrInterrupted)
		if _, ok := <-sigs; ok {
			os.Exit(exitInterrupted)
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(sigs)
		cancel(nil)
	}
}

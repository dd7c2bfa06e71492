package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/boot"
	"github.com/rs/zerolog"
	"strings"
)

// Running on Temporal is the runner-temporal binary (see runs.TemporalBinary).
// `runner worker` becomes runner-temporal; `runner run --engine temporal`
// starts it and shows its progress events with the same display as an
// in-process run.

// addTemporalFlags adds the flags of `run --engine temporal`: the
// connection's are runner-temporal's own (boot.ConnFlags), with its help.
func addTemporalFlags(fs *flag.FlagSet, t *runs.Temporal) *string {
	engine := fs.String("engine", "local", "local (in this process) or temporal (on Temporal workers, through runner-temporal)")
	flagGroup(fs, "With --engine temporal", func() {
		boot.ConnFlags(fs, &t.Conn)
		fs.DurationVar(&t.HeartbeatTimeout, "heartbeat-timeout", 0, "with --engine temporal: a step's worker silent this long is taken for dead (default 20s)")
		fs.IntVar(&t.MaxHistoryEvents, "max-history-events", 0, "with --engine temporal: continue as new past this many history events (default 10000)")
		fs.DurationVar(&t.LocalStepsUnder, "local-steps-under", 0, "with --engine temporal: a command step whose timeout is at most this runs as a local activity, on the worker that runs the workflow when that is the run's host (default 0: none)")
		fs.BoolVar(&t.SharedWorkspace, "shared-workspace", false, "with --engine temporal: every worker sees the workdir and plan at these paths (one host, a shared disk); else the plan's directory travels with the run and its steps stay on one host")
		fs.StringVar(&t.SyncBack, "sync-back", "", "with --engine temporal: write the files of the run's final workdir into `DIR` when it ends")
		fs.DurationVar(&t.HostTimeout, "host-timeout", 0, "with --engine temporal: a step that waits this long for its run's host pins the run to another host (default 20s)")
		fs.Var(negBool{&t.KeepFanOuts}, "spread-fanouts", "with --engine temporal: a for_each's items and a parallel group's children run on any worker, each from the workspace as the fan-out started, their files merged back in item or plan order (false: on the run's host)")
	})
	return engine
}

// workerFlags are the flags of `runner worker`: runner-temporal's own
// (boot.WorkerFlags), which it parses itself; runner lists them for
// --help and completion.
func workerFlags(stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("runner worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = commandUsage(fs, "worker", stdout)
	boot.WorkerFlags(fs, &boot.Worker{})
	return fs
}

// cmdWorker is `runner worker`: runner-temporal takes the process over.
func cmdWorker(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			workerFlags(stdout, stderr).Usage()
			return exitOK
		}
	}
	bin, err := runs.TemporalBinary()
	if err != nil {
		fmt.Fprintf(stderr, "runner worker: %v\n", err)
		return exitUsage
	}
	argv := append([]string{bin, "worker"}, args...)
	if err := syscall.Exec(bin, argv, os.Environ()); err != nil {
		fmt.Fprintf(stderr, "runner worker: starting %s: %v\n", bin, err)
		return exitUsage
	}
	return exitOK // not reached
}

// runOnTemporal runs a checked plan through runner-temporal and shows its
// progress here as for a run in this process (the live display on a
// terminal, the same JSON events otherwise).
func runOnTemporal(r *runs.Run, t runs.Temporal, g *globals, stdout, stderr io.Writer) int {
	prog := r.Prog
	// The config's budgets are refused as the plan's are (the ledger is
	// on this machine, the calls on workers), not silently left out.
	if bs, err := userBudgets(); err != nil {
		r.Close()
		return planErrors(stderr, "runner run", nil, err)
	} else if len(bs) > 0 {
		r.Close()
		path, _ := configPath()
		fmt.Fprintf(stderr, "runner run: %s\n", plans.ConfigBudgetsOnTemporal(path))
		return exitUsage
	}
	g.learnSecrets(prog.Plan) // what runner-temporal prints is masked here too
	log, err := g.logger(stderr, g.progress(stderr))
	if err != nil {
		fmt.Fprintf(stderr, "runner run: %v\n", err)
		return exitUsage
	}
	tolerated := map[string]bool{}
	for _, s := range prog.Plan.AllSteps() {
		tolerated[s.Label] = s.ContinueOnError
	}
	// Ctrl-C reaches runner-temporal too (same process group): it cancels
	// the workflow, which ends the run as interrupted; we wait for that.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// runner-temporal exports the trace when the run ends (the same
	// driver, traceconf.ExportRun, as a run here), so it is sent even
	// where runner-temporal is started on its own.
	t.OTLPEndpoint = g.otlp
	start := time.Now()
	host := "" // where the last step a worker ran ran
	e, err := r.ExecuteOnTemporal(t, g.mask.Writer(stderr), func(ev runs.Event) {
		if f := ev.Finished; f != nil && f.Parent == "" && f.Host != "" && f.Host != host {
			hostChanged(g, log, stderr, host, *ev.Finished)
			host = ev.Finished.Host
		}
		switch {
		case ev.Begin != nil:
			log = log.With().Str("run", ev.Begin.RunID).Logger()
		case ev.Started != nil && g.view != nil:
			g.view.StepStarted(ev.Started.Label, ev.Started.Visit, ev.Started.Parent)
		case ev.Finished != nil && g.view != nil:
			g.view.StepFinished(*ev.Finished)
		case ev.Finished != nil:
			engine.LogStep(log.With().Str("step", ev.Finished.Label).Logger(), *ev.Finished, tolerated[ev.Finished.Label])
		case ev.Waiting != nil && g.format(stderr) == "json":
			log.Warn().Str("step", ev.Waiting.Label).Int("visit", ev.Waiting.Visit).Str("prompt", ev.Waiting.Prompt).
				Strs("next", []string{runs.AnswerCommand(engine.ShellQuote(ev.Board), *ev.Waiting)}).Msg("waiting for an answer")
		case ev.Waiting != nil && !g.quiet:
			// The run waits on Temporal, with no process of ours needed:
			// say how to answer, as a run in one process does when it stops.
			var w io.Writer = stderr
			if g.view != nil {
				w = g.view // above the live block
			}
			fmt.Fprintf(g.mask.Writer(w), "%s waits for an answer: %s\n  %s\n", steps.VisitName(ev.Waiting.Label, ev.Waiting.Visit),
				strings.TrimSpace(ev.Waiting.Prompt), runs.AnswerCommand(engine.ShellQuote(ev.Board), *ev.Waiting))
		}
	})
	g.view.close()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		return runErr(stderr, "runner run", err)
	}
	elapsed := time.Since(start)
	if g.format(stderr) == "json" {
		ev := log.Info()
		if e.Error != "" {
			ev = log.Error().Str("error", e.Error)
		}
		ev.Str("status", e.Status).Int64("duration_ms", elapsed.Milliseconds()).Str("blackboard", e.Board).
			Str("workflow", e.Workflow).Msg("run finished")
	} else {
		if !g.quiet {
			fmt.Fprintf(stderr, "run %s %s in %s (Temporal workflow %s)\n", e.RunID, e.Status, elapsed.Round(time.Millisecond), e.Workflow)
		}
		if e.Error != "" {
			fmt.Fprintf(g.mask.Writer(stderr), "error: %s\n", e.Error)
		}
	}
	if g.report {
		if b, err := board.Load(e.Board); err != nil {
			fmt.Fprintf(stderr, "report: %v\n", err)
		} else if path, err := writeReport(b, e.Board, ""); err != nil {
			fmt.Fprintf(stderr, "report: %v\n", err)
		} else {
			fmt.Fprintf(stderr, "report: %s\n", path)
		}
	}
	fmt.Fprintf(stdout, "blackboard: %s\n", e.Board)
	switch e.Status {
	case board.StatusSucceeded:
		return exitOK
	case board.StatusInterrupted:
		return exitInterrupted
	}
	return exitFailed
}

// hostChanged says which host the run's steps run on, when the first
// top-level step a worker ran finishes and when one finishes on another
// host than the one before it (the run's host died and the run moved,
// or, with a shared workspace, another worker took the step). The steps
// of a group are left out: a fan-out's items run on any worker.
func hostChanged(g *globals, log zerolog.Logger, stderr io.Writer, from string, rec board.StepRecord) {
	step := steps.VisitName(rec.Label, rec.Visit)
	if g.format(stderr) == "json" {
		ev := log.Info().Str("step", step).Str("host", rec.Host)
		if from != "" {
			ev = log.Warn().Str("step", step).Str("host", rec.Host).Str("from", from)
		}
		ev.Msg("steps run on host")
		return
	}
	if g.quiet {
		return
	}
	var w io.Writer = stderr
	if g.view != nil {
		w = g.view // above the live block
	}
	if from == "" {
		fmt.Fprintf(w, "steps run on host %s\n", rec.Host)
		return
	}
	fmt.Fprintf(w, "steps run on host %s from %s (before it, on host %s)\n", rec.Host, step, from)
}

// negBool is a boolean flag, default true, that sets *p to its negation.
type negBool struct{ p *bool }

func (b negBool) String() string {
	if b.p == nil || !*b.p {
		return "true"
	}
	return "false"
}

func (b negBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.p = !v
	return nil
}

func (negBool) IsBoolFlag() bool { return true }

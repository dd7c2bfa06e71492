package runs

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/mask"
	"github.com/planrunner/runner/internal/sys/readlimit"
)

// ReplayOptions say how to replay a saved run (runner replay's flags):
// replay.Options, with the plan and the workdir given as paths. Its
// Registry compiles the plan replayed; nil: the built-in step types.
type ReplayOptions struct {
	replay.Options
	// PlanFile replays this plan file (a changed plan) against the
	// recording; "": the recorded plan.
	PlanFile string
	// WorkdirPath runs command, test and apply_diff steps for real in
	// this directory; "": offline, their results from the recording.
	WorkdirPath string
	// Mask learns the plan's secrets, masked in the replay's board; nil:
	// a mask of the replay's own.
	Mask *mask.Masker
	// Dir is the directory under whose runs (RunsDir) a fork is saved
	// when the recording is not itself a run saved under some RunsDir;
	// "": the current directory.
	Dir string
}

// ForkRunsDir is where a fork of the run saved at recording is saved:
// the runs directory that holds the recording's run
// (DIR/.runner/runs/ID/blackboard.json), else RunsDir(dir).
func ForkRunsDir(recording, dir string) string {
	runDir := filepath.Dir(recording)
	if abs, err := filepath.Abs(runDir); err == nil {
		runDir = abs
	}
	if parent := filepath.Dir(runDir); filepath.Base(parent) == "runs" && filepath.Base(filepath.Dir(parent)) == ".runner" {
		return parent
	}
	if dir == "" {
		dir = "."
	}
	return RunsDir(dir)
}

// Replayed is how a replay went, beside the run it replayed.
type Replayed struct {
	*replay.Report
	Recorded board.Run // the run of the recording
}

// Replay replays the run saved at recording (its blackboard.json) as
// `runner replay` does: against the recorded plan or o.PlanFile, with
// the replay's board written to o.Out, by default replay-<id>.json beside
// the recording. Cancel ctx (cause engine.ErrInterrupted) to stop it.
func Replay(ctx context.Context, recording string, o ReplayOptions) (out *Replayed, err error) {
	saved, err := board.LoadLean(recording)
	if err != nil {
		return nil, usage(err)
	}
	planPath, src := saved.Run().PlanPath, []byte(saved.Run().PlanSource)
	if o.PlanFile != "" {
		if src, err = readlimit.File(o.PlanFile, readlimit.Plan); err != nil {
			return nil, usage(err)
		}
		planPath, _ = filepath.Abs(o.PlanFile)
	}
	reg := o.Registry
	if reg == nil {
		reg = steps.Registry()
	}
	prog, err := engine.CompileToRun(planPath, src, reg)
	if err != nil {
		return nil, &PlanError{prog, err}
	}
	src = nil
	saved.SharePlanSource(prog.Plan.Source)
	m := o.Mask
	if m == nil {
		m = mask.New()
	}
	LearnSecrets(m, prog.Plan)
	opt := o.Options
	opt.Plan, opt.Agents.Mask, opt.BoardOptions.Redact = prog, m, m.String
	if o.WorkdirPath != "" {
		if opt.Workdir, err = Workdir(o.WorkdirPath); err != nil {
			return nil, usage(err)
		}
	}
	if opt.From != "" {
		// A fork is a run of its own: its own id and, unless told
		// otherwise, its own folder beside the runs it was forked from,
		// so `runner runs` lists it and the original's folder is never
		// written.
		if opt.ID == "" {
			opt.ID = cmp.Or(IDOfPath(opt.Out), board.NewID(time.Now()))
		}
		if opt.Out == "" {
			opt.Out = filepath.Join(ForkRunsDir(recording, o.Dir), opt.ID, "blackboard.json")
		}
	}
	if opt.Out == "" {
		opt.Out = filepath.Join(filepath.Dir(recording), "replay-"+board.NewID(time.Now())+".json")
	}
	if opt.Recording, err = filepath.Abs(recording); err != nil {
		opt.Recording = recording
	}
	if opt.From != "" {
		// Checked before its folder is made: a fork refused for a
		// mistake leaves no folder holding only a lock.
		if err := replay.CheckFork(prog, saved, opt); err != nil {
			return nil, usage(err)
		}
		// Owned as a run is while it runs, so it is listed as live.
		dir := filepath.Dir(opt.Out)
		_, statErr := os.Stat(dir)
		if err := os.MkdirAll(dir, board.DirMode); err != nil {
			return nil, err
		}
		if errors.Is(statErr, fs.ErrNotExist) {
			defer func() {
				if out == nil { // its folder holds nothing of a run
					removeLockOnly(dir, opt.Out)
				}
			}()
		}
		lock, err := own(opt.Out)
		if err != nil {
			return nil, usage(err)
		}
		defer lock.Unlock()
	}
	rep, err := replay.Run(ctx, saved, opt)
	if err != nil {
		if errors.Is(err, replay.ErrUsage) {
			return nil, usage(err)
		}
		return nil, err
	}
	return &Replayed{Report: rep, Recorded: saved.Run()}, nil
}

// removeLockOnly removes the folder dir a fork made when it holds nothing
// but the lock of the fork's board out, if that: the fork failed before
// its board was written.
func removeLockOnly(dir, out string) {
	names, err := os.ReadDir(dir)
	if err != nil || len(names) > 1 || len(names) == 1 && names[0].Name() != filepath.Base(boardlock.LockPath(out)) {
		return
	}
	os.Remove(boardlock.LockPath(out))
	os.Remove(dir)
}

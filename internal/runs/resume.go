package runs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/mask"
	"github.com/planrunner/runner/internal/sys/readlimit"
	"github.com/rs/zerolog"
)

// ErrSucceeded is a resume of a run that already succeeded.
var ErrSucceeded = errors.New("already succeeded; nothing to resume")

// ErrNothingLeft is a resume of a run whose every step has run.
var ErrNothingLeft = errors.New("has no step left to run")

// ResumeOptions say how to go on with a saved run.
type ResumeOptions struct {
	// Force goes on with the plan file even when it changed since the
	// run started (else refused).
	Force bool
}

// Resume goes on with the interrupted, failed or waiting run saved at
// path after its last completed step: Reopen, then Execute.
func Resume(ctx context.Context, path string, o ResumeOptions, env Env) (*Result, error) {
	r, err := Reopen(path, o)
	if err != nil {
		return nil, err
	}
	return r.Execute(ctx, env)
}

// Reopen sets up the resume of the run saved at path: it owns the run
// from here on (Execute or Close lets go), reads it and compiles the plan
// it goes on with. A run that already succeeded is ErrSucceeded.
func Reopen(path string, o ResumeOptions) (*Run, error) {
	if _, err := os.Stat(path); err != nil {
		if rem, _ := liveboard.FindRemote(path); rem != nil {
			// A run on Temporal is durable: nothing here to resume.
			return nil, usage(fmt.Errorf("run %s runs on Temporal (workflow %s at %s) and goes on by itself; "+
				"follow it with `runner board %s watch`, answer its inputs with `runner answer`",
				rem.RunID, rem.WorkflowID, rem.HostPort, engine.ShellQuote(path)))
		}
		return nil, usage(err)
	}
	lock, err := own(path)
	if err != nil {
		return nil, usage(err)
	}
	r := &Run{Board: path, resume: true, lock: lock}
	fail := func(err error) (*Run, error) {
		r.Close()
		return nil, err
	}
	// Read once, lazily: entries' contents are decoded when the rest of
	// the run reads them, and written back as read (board.LoadToResume).
	saved, err := board.LoadToResume(path)
	if err != nil {
		return fail(usage(err))
	}
	r.Record, r.saved = saved.Run(), saved
	if r.Record.Status == board.StatusSucceeded {
		return fail(fmt.Errorf("run %s %w", r.Record.ID, ErrSucceeded))
	}
	src, note, err := resumePlanSource(r.Record, o.Force)
	if err != nil {
		return fail(usage(err))
	}
	r.Note = note
	// The plan the run started with was checked whole then: its
	// expressions are compiled when a step first uses them (most of a
	// resumed run's never are). A plan changed since (--force) is
	// checked whole again.
	compile := engine.Compile
	if sha256hex(src) == r.Record.PlanSHA256 {
		compile = engine.CompileChecked
	}
	prog, err := compile(r.Record.PlanPath, src, steps.Registry())
	if err != nil {
		return fail(&PlanError{prog, err})
	}
	if err := prog.Plan.Override(r.Record.Agents); err != nil {
		return fail(usage(err))
	}
	// A called plan is read from its file: one changed since its call ran
	// would mix two versions in one run.
	if err := prog.CallChanged(saved.Recordings()); err != nil {
		if !o.Force {
			return fail(usage(fmt.Errorf("%w; give --force to resume with the changed plan", err)))
		}
		if r.Note != "" {
			r.Note += "; "
		}
		r.Note += err.Error() + "; resuming with it (--force)"
	}
	r.Prog, r.Vars = prog, engine.SavedVars(prog.Plan, r.Record.Vars)
	if r.Record.PlanSHA256 == prog.Plan.SHA256 {
		r.Record.PlanSource = prog.Plan.Source // the same text, kept once
	}
	return r, nil
}

func (r *Run) resumeRun(ctx context.Context, env Env, m *mask.Masker, log zerolog.Logger, set *agents.Set) (*Result, error) {
	// The board Reopen loaded goes on: reading (and rewriting) the whole
	// file again cost more than the step left to run (a 100k-step run).
	opt := board.Options{Sync: env.Sync, Redact: m.String}
	b := r.saved
	r.saved = nil
	if b == nil { // not from Reopen
		var err error
		if b, err = board.Open(r.Board, opt); err != nil {
			return nil, err
		}
	} else if err := b.Attach(r.Board, opt); err != nil {
		return nil, err
	}
	defer noteRun(b) // after Close and stop: its files as the resume leaves them
	defer b.Close()
	stop, srv := serve(b, r.lock, r.Prog.Plan, r.Record.Workdir, env.Warnings)
	defer stop()
	r.running = trackRunning(r.Board, env.Observer, srv)
	defer r.running.close()
	er := &engine.Runner{Prog: r.Prog, Board: b, Log: log, Workdir: r.Record.Workdir, Vars: r.Vars, Agents: set,
		Observer: r.running, Output: env.Output}
	done := b.NumSteps()
	if err := er.Restore(); err != nil {
		if errors.Is(err, engine.ErrFinished) && b.Run().Status == board.StatusRunning {
			// Killed after its last step was saved, before its end was:
			// the resume ends it, as the run would have.
			log.Info().Int("steps_done", done).Msg("ending the run: every step had run")
			return &Result{Board: b, Prog: r.Prog, Agents: set, Log: log, Err: er.End()}, nil
		}
		if errors.Is(err, engine.ErrFinished) {
			return nil, fmt.Errorf("run %s %w", r.Record.ID, ErrNothingLeft)
		}
		return nil, usage(err)
	}
	// The plan's text, once: the board's copy of an unchanged plan gives
	// way to the program's (at 100k steps each is 10 MB).
	src, sha := r.Prog.Plan.Source, r.Prog.Plan.SHA256
	if err := b.UpdateRun(func(run *board.Run) {
		run.PlanSource, run.PlanSHA256 = src, sha
		run.Status, run.Error, run.FinishedAt = board.StatusRunning, "", nil
	}); err != nil {
		return nil, err
	}
	noteRun(b)
	log.Info().Int("steps_done", done).Msg("resuming")
	res := &Result{Board: b, Prog: r.Prog, Agents: set, Log: log}
	res.Err = er.Run(ctx)
	res.outputs(er)
	notifyEnd(b, r.Prog.Plan, m, log)
	return res, nil
}

// resumePlanSource returns the plan to go on with: the saved one, unless
// the plan file changed, which is refused without force.
func resumePlanSource(run board.Run, force bool) ([]byte, string, error) {
	src, err := readlimit.File(run.PlanPath, readlimit.Plan)
	if errors.Is(err, readlimit.ErrTooLarge) {
		return nil, "", err
	}
	if err != nil {
		return []byte(run.PlanSource), fmt.Sprintf("plan %s not found; resuming with the plan saved in the run", run.PlanPath), nil
	}
	if sha := sha256hex(src); sha != run.PlanSHA256 {
		if !force {
			return nil, "", fmt.Errorf("plan %s changed since run %s started (sha256 %.12s…, was %.12s…); give --force to resume with the changed plan", run.PlanPath, run.ID, sha, run.PlanSHA256)
		}
		return src, fmt.Sprintf("plan %s changed since the run started; resuming with it (--force)", run.PlanPath), nil
	}
	return src, "", nil
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

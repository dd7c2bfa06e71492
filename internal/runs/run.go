// Package runs sets up and runs plans as `runner run` and `runner resume`
// do, for any Go program: load and check the plan, resolve its vars,
// choose its board file and run id, build its agents, own the run (its
// lock, its board shared with other processes), run it, and hand back the
// board. The runner CLI only parses flags and prints what these return.
//
// A run is set up in one call (New, Reopen) and run in another
// (Run.Execute), so that a caller can prepare its display for the plan in
// between; Start and Resume do both. Beside them: OpenQuestion answers an
// input step a run waits at, Replay replays a saved run from its file,
// and RunOnTemporal, OpenRemote and Event are the client side of a run on
// Temporal (the runner-temporal binary, which this module never links).
// List and Find list the saved runs through the run index (index.go),
// which runs keep as they start and end; Prune removes old runs.
//
// It sits above the engine, its step types, the board, the agents and
// replay, and may import any of them and package sys; the commands, the
// root package, the servers, the report and the temporal module import
// it, never the packages below it.
package runs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/mask"
	"github.com/rs/zerolog"
)

// Options say what to run (runner run's flags).
type Options struct {
	Plan string // the plan file
	// Vars override the plan's vars by name (--var NAME=VALUE).
	Vars map[string]string
	// Agents change the plan's agents for this run (--agent); they are
	// saved with it, so a resume uses them too.
	Agents plans.AgentOverrides
	// Workdir is where steps run; "": the current directory.
	Workdir string
	// WorkdirElsewhere: the steps run on other hosts (Temporal workers),
	// so Workdir is made absolute but need not exist here.
	WorkdirElsewhere bool
	// Board is where blackboard.json goes; "": under
	// WORKDIR/.runner/runs/<run id>/.
	Board string
	// Reuse are saved runs (their blackboard.json) whose model answers
	// are taken while a request is byte for byte the recorded one.
	Reuse []string
	// Offline takes command, test and apply_diff results from the Reuse
	// recordings too: nothing runs.
	Offline bool
	// Now is the clock the run's start time and id come from; nil: the
	// system clock.
	Now func() time.Time
	// Version is saved with the run as the runner version that made it.
	Version string
	// Registry holds the step types the plan may use; nil: the built-in
	// ones (steps.Registry).
	Registry *engine.Registry
}

// Env is how a run reports and keeps its files, for New and Reopen alike.
type Env struct {
	// Log receives the run's events, each with the run's id; the zero
	// Logger logs nothing.
	Log zerolog.Logger
	// Mask hides the run's secrets: Execute teaches it the plan's secret
	// variables before anything runs, so a caller that writes through it
	// (its logs, its display) shows none. nil: a mask of the run's own.
	Mask *mask.Masker
	// Observer is told of steps as they start and finish.
	Observer engine.Observer
	// OnStream, when set, receives streamed model answers as they come
	// (agents.Options.OnStream).
	OnStream func(agents.StreamChunk)
	// Output, when set, receives each step's process output as it comes
	// (engine.Runner.Output).
	Output func(label string, visit int, stream string) io.Writer
	// Sync fsyncs the journal after every step.
	Sync bool
	// Warnings receives what goes wrong beside the run without stopping
	// it (the board not shared with other processes...); nil: dropped.
	Warnings io.Writer
	// Budgets are the user's budgets (their config file), checked beside
	// the plan's against the ledger every run on the machine shares.
	Budgets []plans.Budget
}

// A UsageError is a mistake in what the run was asked to do (a bad plan,
// var or flag, a missing API key, a run already owned): nothing ran.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usage(err error) error { return &UsageError{err} }

// IsUsage reports whether err is a UsageError or a PlanError: a mistake
// in what was asked, before anything ran.
func IsUsage(err error) bool {
	var u *UsageError
	var p *PlanError
	return errors.As(err, &u) || errors.As(err, &p)
}

// A PlanError is a plan that does not load: its problems (plans.Errors
// when it was read) and the program as far as it compiled, whose source
// locates them.
type PlanError struct {
	Prog *engine.Program
	Err  error
}

func (e *PlanError) Error() string { return e.Err.Error() }
func (e *PlanError) Unwrap() error { return e.Err }

// Run is a run set up and not yet running: nothing is written until
// Execute (a resumed run holds its lock from Reopen on; Close lets go of
// a Run that is never executed).
type Run struct {
	Prog   *engine.Program
	Vars   map[string]any // the plan's vars after the overrides
	Record board.Run      // the run as its board begins (New) or was saved (Reopen)
	Board  string         // the path of its blackboard.json
	// Note says, for a resumed run, which plan it goes on with when that
	// is not simply the saved one.
	Note string

	opts   Options
	resume bool
	lock   *boardlock.Lock // Reopen: held until Execute ends
	saved  *board.Board    // Reopen: the run as loaded, continued by Execute
	// running keeps the running file and the live board's streamed
	// answers; set (by Execute or its resume) before the first step.
	running *runningFile
}

// Result is how a run ended.
type Result struct {
	// Board is the run's board, closed: read it, its path is Board.Path().
	Board  *board.Board
	Prog   *engine.Program
	Agents *agents.Set
	// Log is Env.Log with the run's id.
	Log zerolog.Logger
	// Err is nil when the run succeeded, else an *engine.RunError saying
	// how it ended (failed, interrupted, waiting for an answer).
	Err error
	// Outputs are the plan's declared outputs (its outputs: block) of a
	// run that succeeded; nil otherwise, or when it declares none.
	// OutputsErr is why they could not be evaluated.
	Outputs    map[string]any
	OutputsErr error
	// Reused counts the model calls taken from Options.Reuse; nil
	// without it.
	Reused *agents.ReuseStats
}

// Status is the run's final status (board.StatusSucceeded, ...).
func (r *Result) Status() string {
	var re *engine.RunError
	switch {
	case r.Err == nil:
		return board.StatusSucceeded
	case errors.As(r.Err, &re):
		return re.Status
	}
	return board.StatusFailed
}

// Start sets up a new run and runs it to its end: New, then Execute.
func Start(ctx context.Context, o Options, env Env) (*Result, error) {
	r, err := New(o)
	if err != nil {
		return nil, err
	}
	return r.Execute(ctx, env)
}

// New sets up a new run: the plan loaded and checked, its agents
// changed, its vars resolved, its workdir, id and board path chosen.
// Nothing is written.
func New(o Options) (*Run, error) {
	reg := o.Registry
	if reg == nil {
		reg = steps.Registry()
	}
	prog, err := engine.LoadToRun(o.Plan, reg)
	if err != nil {
		return nil, &PlanError{prog, err}
	}
	if err := prog.Plan.Override(o.Agents); err != nil {
		return nil, usage(err)
	}
	vars, err := engine.ResolveVars(prog.Plan, o.Vars)
	if err != nil {
		return nil, usage(err)
	}
	if o.Offline && len(o.Reuse) == 0 {
		return nil, usage(errors.New("--offline takes step results from the recordings given with --reuse: give at least one"))
	}
	wd, err := Workdir(o.Workdir)
	if err != nil && o.WorkdirElsewhere && o.Workdir != "" {
		wd, err = filepath.Abs(o.Workdir)
	}
	if err != nil {
		return nil, usage(err)
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	start := now().UTC()
	id := board.NewID(start)
	path := o.Board
	if own := IDOfPath(path); own != "" {
		id = own
	}
	if path == "" {
		path = filepath.Join(wd, ".runner", "runs", id, "blackboard.json")
	} else if err := board.CheckNew(path); err != nil {
		return nil, usage(fmt.Errorf("--out %w", err))
	}
	planPath, _ := filepath.Abs(o.Plan)
	rec := board.Run{ID: id, PlanPath: planPath, PlanSHA256: prog.Plan.SHA256, PlanSource: prog.Plan.Source,
		Vars: vars, Workdir: wd, Status: board.StatusRunning, StartedAt: start, RunnerVersion: o.Version, Agents: o.Agents.Saved()}
	return &Run{Prog: prog, Vars: vars, Record: rec, Board: path, opts: o}, nil
}

// Workdir is the absolute path of dir, which must be a directory; "" is
// the current directory.
func Workdir(dir string) (string, error) {
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

// Close lets go of a Run that will not be executed.
func (r *Run) Close() {
	r.saved = nil
	if r.lock != nil {
		r.lock.Unlock()
		r.lock = nil
	}
}

// Execute runs r until it ends or ctx is canceled (with
// engine.ErrInterrupted as the cause, the run ends as interrupted and can
// be resumed). The error is for a run that could not start (a
// UsageError when the fault is in what was asked); how the run itself
// ended is Result.Err.
func (r *Run) Execute(ctx context.Context, env Env) (*Result, error) {
	defer r.Close()
	m := env.Mask
	if m == nil {
		m = mask.New()
	}
	LearnSecrets(m, r.Prog.Plan)
	log := env.Log.With().Str("run", r.Record.ID).Logger()
	// Streamed answers go to the caller's display, to the running file,
	// where runner serve shows them, and to the live board's clients.
	onStream := func(c agents.StreamChunk) {
		if env.OnStream != nil {
			env.OnStream(c)
		}
		if running := r.running; running != nil {
			running.streamed(c)
		}
	}
	set, err := agents.New(r.Prog.Plan, agents.Options{Log: log, Mask: m, OnStream: onStream, Budgets: env.Budgets, RunID: r.Record.ID})
	if err != nil {
		return nil, usage(err) // a missing API key ends here, before the first step
	}
	// The MCP servers the run started end with it (their process groups).
	defer func() {
		if err := set.Close(); err != nil {
			log.Warn().Err(err).Msg("ending the MCP servers")
		}
	}()
	if r.resume {
		return r.resumeRun(ctx, env, m, log, set)
	}
	ru, err := loadReuse(r.opts.Reuse, r.opts.Offline, r.Prog)
	if err != nil {
		return nil, err
	}
	if ru != nil {
		set.SetReuse(ru.u)
		if r.opts.Offline {
			ru.u.ReuseTools() // no MCP server starts either
		}
	}
	if err := os.MkdirAll(filepath.Dir(r.Board), board.DirMode); err != nil {
		return nil, err
	}
	lock, err := own(r.Board)
	if err != nil {
		return nil, usage(err)
	}
	defer lock.Unlock()
	var ended *board.Board
	defer func() {
		// After Close, its files as the run leaves them; before Unlock, so
		// nothing else changes the run between the stat and the entry.
		if ended != nil {
			noteRun(ended)
		}
	}()
	b, err := board.Create(r.Board, r.Record, board.Options{Sync: env.Sync, Redact: m.String})
	if err != nil {
		return nil, err
	}
	noteRun(b)
	ended = b
	defer b.Close()
	stop, srv := serve(b, lock, r.Prog.Plan, r.Record.Workdir, env.Warnings)
	r.running = trackRunning(r.Board, env.Observer, srv)
	defer r.running.close()
	er := &engine.Runner{Prog: r.Prog, Board: b, Log: log, Workdir: r.Record.Workdir, Vars: r.Vars, Agents: set,
		Observer: r.running, Output: env.Output}
	if ru != nil {
		er.Script = ru.script()
	}
	res := &Result{Board: b, Prog: r.Prog, Agents: set, Log: log}
	res.Err = er.Run(ctx)
	res.outputs(er)
	stop()
	if ru != nil {
		st := ru.save(b, env.Warnings)
		res.Reused = &st
	}
	notifyEnd(b, r.Prog.Plan, m, log)
	return res, nil
}

// LearnSecrets teaches m the values of the plan's secret variables (its
// secrets, its providers' key variables) from this environment.
func LearnSecrets(m *mask.Masker, p *plans.Plan) {
	for _, n := range p.SecretNames() {
		m.Add(os.Getenv(n))
	}
}

// SavedPlan is the plan a saved run was made from, as far as it reads (a
// plan with problems still names its agents and secrets); nil when it
// does not read at all. Read lean (plans.ParseLeanText): its readers want
// its secrets and agents, not its steps' YAML, which for a 100k-step
// run is a tree of 170 MB.
func SavedPlan(run board.Run) *plans.Plan {
	p, _ := plans.ParseLeanText(run.PlanPath, run.PlanSource)
	return p
}

func warn(w io.Writer, format string, a ...any) {
	if w != nil {
		fmt.Fprintf(w, format, a...)
	}
}

// outputs evaluates the plan's declared outputs of a run that succeeded.
func (res *Result) outputs(er *engine.Runner) {
	if res.Err != nil || len(res.Prog.Plan.Outputs) == 0 {
		return
	}
	res.Outputs, res.OutputsErr = er.Outputs()
}

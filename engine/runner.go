package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/planrunner/runner/agents"
	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/plans"
	"github.com/rs/zerolog"
)

// ErrInterrupted is the cause a caller cancels the run's context with on
// SIGINT/SIGTERM: the run ends as `interrupted` rather than `failed`.
var ErrInterrupted = errors.New("interrupted")

var errRunTimeout = errors.New("limits.timeout reached")

// RunError is how a run that did not succeed ends.
type RunError struct {
	Status string // failed or interrupted
	Label  string // the step that ended it, if one did
	Err    error
	// Fatal: the run must end even under continue_on_error (an interrupt,
	// the run's timeout, a limit).
	Fatal bool
}

func (e *RunError) Error() string {
	if e.Label != "" {
		return fmt.Sprintf("step %s: %v", e.Label, e.Err)
	}
	return e.Err.Error()
}

func (e *RunError) Unwrap() error { return e.Err }

// Observer is told when steps start and finish (the live progress display).
type Observer interface {
	StepStarted(label string, visit int, parent string)
	StepFinished(rec board.StepRecord)
}

// Runner executes a compiled plan against a board: the PlanRunner.
type Runner struct {
	Prog    *Program
	Board   *board.Board
	Log     zerolog.Logger
	Workdir string
	Vars    map[string]any // after --var overrides (see ResolveVars)
	// Agents is the plan's agent set that llm and coordinate steps call
	// models through (cmd/runner builds it first, so a missing API key
	// stops the run before its first step). nil: built from the plan with
	// default options when a step first needs it.
	Agents   *agents.Set
	Observer Observer
	// Output, when set, gives a writer that receives a step visit's
	// process output as it comes (stream "stdout" or "stderr"): the CLI's
	// --show-output. nil, or a nil writer, streams nothing.
	Output func(label string, visit int, stream string) io.Writer
	// Secrets are the values of the plan's secret variables
	// (plans.Plan.SecretNames); nil: read from runner's environment.
	Secrets map[string]string
	// Sleep waits between retries; nil: a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a number in [0,1) for retry backoff; nil: math/rand.
	Jitter func() float64
	// Script, when set, is the recording a replay follows (see Script).
	Script Script
	// Untimed leaves limits.timeout unarmed: a replay, which runs at its
	// own speed, ends the run where the recording says the timeout fired
	// (Script.Cut) instead.
	Untimed bool
	// Clock, when set, is the time step visits read (a Temporal workflow's
	// deterministic clock); nil: the system clock.
	Clock func() time.Time

	eval    *evaluator
	env     []string
	initErr error        // the plan's env could not be rendered
	total   atomic.Int64 // step executions, for limits.max_steps
	mu      sync.Mutex
	visits  map[string]int
	logs    map[string]zerolog.Logger
	runID   string
	done    map[string]map[string]board.StepRecord // see Restore
	startPC int
	clockN  map[visitKey]int        // clock readings per step visit
	readN   map[visitKey]int        // recorded key reads per step visit
	cut     context.CancelCauseFunc // ends the run (Script.Cut)

	agentsOnce sync.Once
	agentsErr  error
}

func (r *Runner) agentSet() (*agents.Set, error) {
	r.agentsOnce.Do(func() {
		if r.Agents == nil {
			r.Agents, r.agentsErr = agents.New(r.Prog.Plan, agents.Options{})
		}
	})
	return r.Agents, r.agentsErr
}

// Run executes the plan from its first step (or from where Restore left
// it). It records every step on the board, marks the run's final status,
// and saves the board when it is file-backed. A nil error is success.
func (r *Runner) Run(ctx context.Context) error {
	r.init()
	if r.initErr != nil {
		return r.finishRun(&RunError{Status: StatusFailed, Err: r.initErr, Fatal: true})
	}
	if lim := r.Prog.Plan.Limits.Timeout; lim > 0 && !r.Untimed {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, lim, TimeoutCause(lim))
		defer cancel()
	}
	ctx, r.cut = context.WithCancelCause(ctx)
	defer r.cut(nil)
	err := r.runTop(ctx)
	return r.finishRun(err)
}

// PlanPerms are the agents' board key patterns, as the board enforces
// them.
func PlanPerms(p *plans.Plan) map[string]board.Perms {
	perms := map[string]board.Perms{}
	for _, a := range p.Agents {
		if len(a.Board.Read) > 0 || len(a.Board.Write) > 0 {
			perms[a.Name] = board.Perms{Read: a.Board.Read, Write: a.Board.Write}
		}
	}
	return perms
}

func (r *Runner) init() {
	if r.eval != nil {
		return
	}
	if r.visits == nil {
		r.visits = map[string]int{}
	}
	if r.clockN == nil {
		r.clockN, r.readN = map[visitKey]int{}, map[visitKey]int{}
	}
	r.logs = map[string]zerolog.Logger{}
	if r.Workdir == "" {
		r.Workdir, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(r.Workdir); err == nil {
		r.Workdir = abs
	}
	// The agents' board key patterns hold wherever the plan runs: in this
	// process, on Temporal's workers and in the workflow, in a replay.
	if perms := PlanPerms(r.Prog.Plan); len(perms) > 0 {
		r.Board.SetPerms(perms)
	}
	run := r.Board.Run()
	r.runID = run.ID
	vars := r.Vars
	if vars == nil {
		vars, _ = ResolveVars(r.Prog.Plan, nil)
	}
	runView := map[string]any{"id": run.ID, "plan": r.Prog.Plan.Name, "workdir": r.Workdir, "plan_dir": planDir(r.Prog.Plan.Path),
		"started_at": run.StartedAt.UTC().Format(time.RFC3339)}
	secrets := r.secretValues()
	env, envView, err := r.stepEnv(map[string]any{"vars": vars, "secrets": secrets, "run": runView})
	r.env, r.initErr = env, err
	b := r.Board
	r.eval = newEvaluator(r.Prog, map[string]any{
		"vars":    vars,
		"env":     envView,
		"secrets": secrets,
		"run":     runView,
		"board": func(key string) any {
			if e, ok := b.Get(key); ok {
				return e.Content
			}
			return nil
		},
		"now": func() time.Time { return time.Now().UTC() }, // each visit reads its own clock (clockFor)
		"entries": func(section string) []any {
			return entryViews(b.Query(board.Filter{Section: section}))
		},
		"conflicts": func(key string) []any {
			return entryViews(b.Conflicts(key))
		},
	})
}

// runTop walks the top-level steps, following gotos.
func (r *Runner) runTop(ctx context.Context) error {
	steps := r.Prog.Steps
	for pc := r.startPC; pc < len(steps); {
		if stop := r.stopped(ctx); stop != nil {
			return stop
		}
		jump, err := r.visit(ctx, steps[pc], "")
		if err != nil {
			return err
		}
		if pc, err = r.Prog.Next(pc, jump); err != nil {
			return err
		}
	}
	return nil
}

// logger is the step's logger, made once per label.
func (r *Runner) logger(label string) zerolog.Logger {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.logs[label]
	if !ok {
		l = r.Log.With().Str("step", label).Logger()
		r.logs[label] = l
	}
	return l
}

// LogStep writes the "step finished" event of rec to log (a logger with
// the step's label): the one place its shape is made, for runs in this
// process and runs elsewhere (on Temporal) shown here. Info, also for
// failures: a failure that ends the run is reported as the run's error,
// and the progress display shows each one.
func LogStep(log zerolog.Logger, rec board.StepRecord, tolerated bool) {
	ev := log.Info()
	switch rec.Status {
	case StatusFailed:
		ev = log.Error().Bool("tolerated", tolerated)
	case StatusCanceled:
		ev = log.Warn()
	}
	if rec.Error != "" {
		ev = ev.Str("error", rec.Error)
	}
	ev.Int("visit", rec.Visit).Str("status", rec.Status).Int64("duration_ms", rec.DurationMS).Msg("step finished")
}

// stopped reports why the run's context ended, if it did.
func (r *Runner) stopped(ctx context.Context) *RunError {
	if ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errSiblingFailed):
		return nil // the group's business, not the run's
	case errors.Is(cause, ErrInterrupted) || errors.Is(cause, context.Canceled):
		return &RunError{Status: StatusInterrupted, Err: ErrInterrupted, Fatal: true}
	}
	return &RunError{Status: StatusFailed, Err: cause, Fatal: true}
}

// visit runs one step (or group) once, records it, and says where to go.
func (r *Runner) visit(ctx context.Context, n *Node, parent string) (jump string, err error) {
	r.mu.Lock()
	r.visits[n.Label]++
	visit := r.visits[n.Label]
	r.mu.Unlock()
	if err := VisitLimit(n, visit); err != nil {
		return "", err
	}
	if err := StepsLimit(r.Prog, n, r.total.Add(1)); err != nil {
		return "", err
	}
	var finish time.Time
	start := time.Now().UTC()
	if r.Script != nil {
		if r.Script.Ends(n.Label, visit) {
			return "", &RunError{Status: StatusInterrupted, Label: n.Label, Err: ErrEnded, Fatal: true}
		}
		if cause := r.Script.Cut(n.Label, visit); cause != nil {
			r.cut(cause)
		}
		if s, f, ok := r.Script.Times(n.Label, visit); ok {
			start, finish = s, f
		} else if stop := r.stopped(ctx); stop != nil {
			return "", stop // the run was stopped before this visit, as recorded: nothing of it is saved
		}
	}
	if r.Observer != nil {
		r.Observer.StepStarted(n.Label, visit, parent)
	}
	log := r.logger(n.Label)
	log.Debug().Int("visit", visit).Msg("start")
	rec := board.StepRecord{Label: n.Label, Visit: visit, Type: n.Type, Parent: parent, StartedAt: start}
	vc := r.clockFor(n.Label, visit, parent != "")

	var res Result
	var stepErr error
	status := StatusSucceeded
	run := true
	if n.If != nil {
		ok, err := r.eval.bool(n.If, nil, vc)
		switch {
		case err != nil:
			stepErr, run = fmt.Errorf("if: %w", err), false
		case !ok:
			status, run = StatusSkipped, false
		}
	}
	if run {
		if n.Children != nil {
			res, stepErr = r.group(ctx, n, visit)
			if r.Script != nil {
				if cause := r.Script.CutAfter(n.Label, visit); cause != nil {
					r.cut(cause)
				}
				if stepErr == nil || !errors.Is(stepErr, ErrEnded) {
					if r.Script.EndsAfter(n.Label, visit) {
						stepErr = &RunError{Status: StatusInterrupted, Label: n.Label, Err: ErrEnded, Fatal: true}
					}
				}
			}
		} else {
			res, stepErr = r.attempts(ctx, n, visit, &rec, log, vc)
		}
	}
	if errors.Is(stepErr, ErrEnded) {
		return "", stepErr // the recording ends inside: nothing of this visit is saved
	}
	if isWaiting(stepErr) {
		log.Info().Int("visit", visit).Msg("waiting for an answer")
		return "", waitingErr(n.Label, stepErr) // nothing of this visit is saved: resume asks again
	}
	stop := r.stopped(ctx)
	if stepErr != nil {
		status = StatusFailed
		switch {
		case stop != nil:
			status = StatusCanceled
		case !fatal(stepErr) && !errors.Is(stepErr, errSiblingFailed) && errors.Is(context.Cause(ctx), errSiblingFailed):
			stepErr = fmt.Errorf("%w (%v)", errSiblingFailed, stepErr)
			status = StatusCanceled
		case errors.Is(stepErr, errSiblingFailed):
			status = StatusCanceled // a group whose children were canceled, not failed
		}
	}
	if stepErr == nil && res.Goto != "" && parent != "" {
		stepErr, status = fmt.Errorf("goto %q inside a parallel group is not allowed", res.Goto), StatusFailed
	}
	rec.Status = status
	rec.FinishedAt = finish
	if finish.IsZero() {
		rec.FinishedAt = time.Now().UTC()
	}
	rec.DurationMS = rec.FinishedAt.Sub(rec.StartedAt).Milliseconds()
	rec.Goto = res.Goto
	if stepErr != nil {
		rec.Error = stepErr.Error()
	}
	if err := r.record(n, &rec, res, vc); err != nil {
		if !errors.Is(err, board.ErrVersion) && !errors.Is(err, board.ErrDenied) {
			return "", &RunError{Status: StatusFailed, Label: n.Label, Err: err, Fatal: true}
		}
		// The step's own compare-and-set lost, or its author may not
		// write the key: the step failed.
		stepErr, status = err, StatusFailed
		rec.Status, rec.Error, res.Write, res.Goto = status, err.Error(), nil, ""
		if err := r.record(n, &rec, res, vc); err != nil {
			return "", &RunError{Status: StatusFailed, Label: n.Label, Err: err, Fatal: true}
		}
	}
	LogStep(log, rec, n.ContinueOnError)
	switch {
	case fatal(stepErr):
		return "", stepErr
	case stop != nil && stepErr != nil:
		stop.Label = n.Label
		return "", stop
	case stepErr != nil && !n.ContinueOnError:
		return "", &RunError{Status: StatusFailed, Label: n.Label, Err: stepErr}
	}
	return res.Goto, nil
}

// record makes a finished visit visible to expressions and durable.
func (r *Runner) record(n *Node, rec *board.StepRecord, res Result, vc *visitClock) error {
	raw, err := encodeResult(res)
	if err != nil {
		return err
	}
	rec.Result = raw
	// The audit entry holds the step's output; its full result is in the
	// step record, so it is not encoded twice.
	meta := map[string]any{"visit": rec.Visit, "type": n.Type, "status": rec.Status}
	if rec.Error != "" {
		meta["error"] = rec.Error
	}
	section := "steps"
	if n.Write != nil && n.Write.Section != "" {
		section = n.Write.Section
	}
	entry := board.Entry{Section: section, Role: "step", Author: "runner", Label: n.Label, Content: res.Output, Meta: meta}
	var kvs []*board.WriteOp
	if res.Write != nil && rec.Status == StatusSucceeded {
		kvs = append(kvs, res.Write)
	}
	if n.WriteKey != nil && rec.Status == StatusSucceeded {
		key, err := r.eval.render(n.WriteKey, vc)
		if err != nil {
			return fmt.Errorf("write.key: %w", err)
		}
		kvs = append(kvs, &board.WriteOp{Key: key, Value: res.Output, TTL: n.Write.TTL, Section: section,
			Author: "runner", Label: n.Label, Role: "step", Meta: meta, ExpectVersion: -1})
	}
	if err := r.Board.FinishStep(*rec, entry, kvs...); err != nil {
		return err
	}
	r.eval.set(n.Label, withTimedOut(stateView(rec.Status, res.Output, rec.Error, rec.Visit, rec.DurationMS, orZero(res.Fields, n)), res))
	if r.Observer != nil {
		r.Observer.StepFinished(*rec)
	}
	return nil
}

func orZero(fields any, n *Node) any {
	if fields != nil {
		return fields
	}
	return zeroResult(n)
}

// attempts runs a leaf step, retrying as its `retry` says.
func (r *Runner) attempts(ctx context.Context, n *Node, visit int, rec *board.StepRecord, log zerolog.Logger, vc *visitClock) (Result, error) {
	if r.Script != nil {
		if saved, ok := r.Script.Result(n.Label, visit); ok {
			return r.replayed(n, saved, rec)
		}
	}
	for attempt := 1; ; attempt++ {
		rec.Attempts = attempt
		res, err := r.once(ctx, n, visit, attempt, vc)
		rec.Inputs = res.inputs
		if err == nil && n.Until != nil {
			step := stateView(StatusSucceeded, res.Output, "", visit, 0, orZero(res.Fields, n))
			ok, uerr := r.eval.bool(n.Until, map[string]any{"step": step}, vc)
			switch {
			case uerr != nil:
				return res, fmt.Errorf("retry.until: %w", uerr)
			case !ok:
				err = fmt.Errorf("retry.until (%s) still false after %d attempts", n.Retry.Until.Src, attempt)
			}
		}
		if err == nil || n.Retry == nil || attempt > n.Retry.Max || r.stopped(ctx) != nil {
			return res, err
		}
		delay := r.backoff(n, attempt)
		rec.Delays = append(rec.Delays, delay.Milliseconds())
		log.Warn().Err(err).Int("visit", visit).Int("attempt", attempt).Int64("backoff_ms", delay.Milliseconds()).Msg("retrying")
		if err := r.sleep(ctx, delay); err != nil {
			return res, err
		}
	}
}

// once runs one attempt with the step's timeout, turning a panic in a step
// type into an error rather than a crash.
func (r *Runner) once(ctx context.Context, n *Node, visit, attempt int, vc *visitClock) (res Result, err error) {
	var timeout error
	if n.Timeout > 0 {
		timeout = fmt.Errorf("timed out after %s", n.Timeout)
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, n.Timeout, timeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error in step type %s: %v\n%s", n.Type, p, debug.Stack())
		}
	}()
	sc := &StepContext{Label: n.Label, Visit: visit, Attempt: attempt, RunID: r.runID,
		Workdir: r.Workdir, Env: r.env, Board: r.Board, Plan: r.Prog.Plan,
		Log: r.logger(n.Label), eval: r.eval, runner: r, clock: vc}
	res, err = n.Impl.Run(ctx, sc)
	res.inputs = sc.inputs
	if err != nil && timeout != nil && context.Cause(ctx) == timeout && !isWaiting(err) {
		// Every step its timeout stopped says so: steps.X.timed_out, and
		// the error names the timeout once (a step that returned the
		// cause itself is not wrapped in it again).
		res.TimedOut = true
		if !errors.Is(err, timeout) {
			err = fmt.Errorf("%w: %v", timeout, err)
		}
	}
	return res, err
}

// backoff is the delay before retry number attempt: exponential, capped,
// with jitter (half fixed, half random) so parallel retries spread out.
func (r *Runner) backoff(n *Node, attempt int) time.Duration {
	d := n.Retry.Backoff
	for i := 1; i < attempt && d < n.Retry.MaxBackoff; i++ {
		d *= 2
	}
	if n.Retry.MaxBackoff > 0 && d > n.Retry.MaxBackoff {
		d = n.Retry.MaxBackoff
	}
	j := rand.Float64
	if r.Jitter != nil {
		j = r.Jitter
	}
	return d/2 + time.Duration(j()*float64(d/2))
}

func (r *Runner) sleep(ctx context.Context, d time.Duration) error {
	if r.Sleep != nil {
		return r.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// replayed serves a step from a saved record.
func (r *Runner) replayed(n *Node, saved board.StepRecord, rec *board.StepRecord) (Result, error) {
	res, err := decodeResult(n, saved.Result)
	if err != nil {
		return res, err
	}
	res.Goto = saved.Goto
	rec.Attempts, rec.Delays, rec.Inputs = saved.Attempts, saved.Delays, saved.Inputs
	if saved.Status == StatusFailed || saved.Status == StatusInterrupted || saved.Status == StatusCanceled {
		return res, &savedErr{text: saved.Error, sibling: CanceledBy(saved) == CanceledRunning}
	}
	return res, nil
}

// finishRun marks the run's final status and saves the board.
func (r *Runner) finishRun(err error) error {
	status, msg := StatusSucceeded, ""
	if err != nil {
		var re *RunError
		if !errors.As(err, &re) {
			re = &RunError{Status: StatusFailed, Err: err}
			err = re
		}
		status, msg = re.Status, re.Error()
	}
	now := time.Now().UTC()
	uerr := r.Board.UpdateRun(func(run *board.Run) {
		run.Status, run.Error, run.FinishedAt = status, msg, &now
	})
	if uerr == nil && r.Board.Path() != "" {
		uerr = r.Board.Save()
	}
	if uerr != nil && err == nil {
		return &RunError{Status: StatusFailed, Err: fmt.Errorf("saving the board: %w", uerr)}
	}
	return err
}

// planDir is the absolute directory of the plan file, so a plan can find
// files that ship beside it whatever the current directory is.
func planDir(path string) string {
	if path == "" {
		return ""
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Dir(path)
	}
	return filepath.Dir(abs)
}

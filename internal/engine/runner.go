package engine

import (
	"context"
	"encoding/json"
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

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
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
	// models through (runs.New builds it first, so a missing API key
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
	// SecretEval, when set, decides every evaluation of an expression
	// that reads a secret (secrets.NAME, or a plan env value made from
	// one): eval runs it against the secret values it is given. The
	// Temporal workflow, which must take the same branch whichever worker
	// replays its history, runs eval once with its worker's values inside
	// a side effect and keeps only the outcome; the expression sees
	// Secrets otherwise.
	SecretEval func(eval func(secrets map[string]string) (any, error)) (any, error)
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
	// Workspace, when set, runs each read of the workdir by files() and
	// read_file() (a Temporal workflow keeps the answer in its history,
	// and asks the host its run is pinned to when the workdir is there);
	// nil: read here.
	Workspace func(call WorkspaceCall, read func() (json.RawMessage, error)) (json.RawMessage, error)
	// Clock, when set, is the time step visits read (a Temporal workflow's
	// deterministic clock); nil: the system clock.
	Clock func() time.Time

	eval    *evaluator
	env     []string
	initErr error        // the plan's env could not be rendered
	total   atomic.Int64 // step executions, for limits.max_steps
	mu      sync.Mutex
	visits  *visitCounts
	frames  map[string]*evaluator // a callee's expressions, by call label (subplan.go)
	runID   string
	done    map[string]map[string]board.StepRecord // see Restore
	startPC int
	endErr  error            // how a restored run whose every step ran ended (End)
	clockN  map[visitKey]int // clock readings per step visit
	readN   map[visitKey]int // recorded key reads per step visit
	wsN     map[visitKey]int // workspace calls per step visit

	metaMu sync.Mutex
	metas  map[metaKey]map[string]any // see stepMeta

	waitMu   sync.Mutex // with waitCond: children waiting for their needs (local.Await)
	waitCond *sync.Cond

	agentsOnce sync.Once
	agentsErr  error
	ownAgents  bool // the Runner made Agents, and ends its MCP servers
}

func (r *Runner) agentSet() (*agents.Set, error) {
	r.agentsOnce.Do(func() {
		if r.Agents == nil {
			r.Agents, r.agentsErr = agents.New(r.Prog.Plan, agents.Options{})
			r.ownAgents = r.agentsErr == nil
		}
	})
	return r.Agents, r.agentsErr
}

// Run executes the plan from its first step (or from where Restore left
// it). It records every step on the board, marks the run's final status,
// and saves the board when it is file-backed. A nil error is success.
func (r *Runner) Run(ctx context.Context) error {
	defer func() {
		if r.ownAgents {
			_ = r.Agents.Close()
		}
	}()
	r.init()
	if r.initErr != nil {
		return r.finishRun(&RunError{Status: StatusFailed, Err: r.initErr, Fatal: true})
	}
	if lim := r.Prog.Plan.Limits.Timeout; lim > 0 && !r.Untimed {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, lim, TimeoutCause(lim))
		defer cancel()
	}
	return r.finishRun(Drive(ctx, r, local{r}, r.startPC))
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
		r.visits = newVisitCounts(r.Prog)
	}
	r.frames = map[string]*evaluator{}
	r.waitCond = sync.NewCond(&r.waitMu)
	if r.clockN == nil {
		r.clockN, r.readN, r.wsN = map[visitKey]int{}, map[visitKey]int{}, map[visitKey]int{}
	}
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
	base := map[string]any{
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
		"now":       func() time.Time { return time.Now().UTC() }, // each visit reads its own clock (clockFor)
		"files":     outsideStep["files"],
		"read_file": outsideStep["read_file"],
		"entries": func(section string) []any {
			return entryViews(b.Query(board.Filter{Section: section}))
		},
		"conflicts": func(key string) []any {
			return entryViews(b.Conflicts(key))
		},
	}
	if r.SecretEval != nil {
		base[secretEvalName] = r.secretEvalFor()
	}
	r.eval = newEvaluator(r.Prog, base)
}

// wake tells children waiting for their needs that one has returned.
func (r *Runner) wake() {
	r.waitMu.Lock()
	r.waitCond.Broadcast()
	r.waitMu.Unlock()
}

// logger is the step's logger. It is made at each call, not kept per
// label: one small allocation costs less than a run-wide lock per call,
// and a plan of 100k steps does not hold 100k loggers to its end.
func (r *Runner) logger(label string) zerolog.Logger {
	return r.Log.With().Str("step", label).Logger()
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
	if rec.Host != "" {
		ev = ev.Str("host", rec.Host)
	}
	ev.Int("visit", rec.Visit).Str("status", rec.Status).Int64("duration_ms", rec.DurationMS).Msg("step finished")
}

// record makes a finished visit visible to expressions and durable.
func (r *Runner) record(n *Node, rec *board.StepRecord, res Result, vc *visitClock) error {
	// A large output goes to the board as its key, its text held apart
	// (board.Held): the result's JSON, 1.4 times an answer with
	// newlines, is not built only to be held apart again.
	h := new(board.Held)
	raw, err := encodeResultHeld(res, h)
	if err != nil {
		return err
	}
	rec.Result = raw
	rec.Hold(h)
	// The audit entry holds the step's output; its full result is in the
	// step record, so it is not encoded twice.
	meta := r.stepMeta(rec.Visit, n.Type, rec.Status, rec.Error)
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
		key, err := r.evalOf(n).render(n.WriteKey, vc)
		if err != nil {
			return fmt.Errorf("write.key: %w", err)
		}
		kvs = append(kvs, &board.WriteOp{Key: key, Value: res.Output, TTL: n.Write.TTL, Section: section,
			Author: "runner", Label: n.Label, Role: "step", Meta: meta, ExpectVersion: -1})
	}
	if err := r.Board.FinishStep(*rec, entry, kvs...); err != nil {
		return err
	}
	r.setView(n, *rec, res)
	if r.Observer != nil {
		r.Observer.StepFinished(*rec)
	}
	return nil
}

// metaKey tells apart the metas of step entries without an error.
type metaKey struct {
	visit       int
	typ, status string
}

// stepMeta is the meta of a step visit's audit entry. One without an
// error, on one of a step's first visits, is shared by every entry
// alike: the board never changes a meta it keeps (it copies one it adds
// to). Later visits of a loop get their own: kept, they would grow the
// cache by one per visit, and the board keeps a meta as its JSON anyway.
func (r *Runner) stepMeta(visit int, typ, status, errText string) map[string]any {
	if errText != "" || visit >= len(visitMetas()) {
		m := map[string]any{"visit": visit, "type": typ, "status": status}
		if errText != "" {
			m["error"] = errText
		}
		return m
	}
	k := metaKey{visit, typ, status}
	r.metaMu.Lock()
	defer r.metaMu.Unlock()
	m, ok := r.metas[k]
	if !ok {
		m = map[string]any{"visit": visit, "type": typ, "status": status}
		if r.metas == nil {
			r.metas = map[metaKey]map[string]any{}
		}
		r.metas[k] = m
	}
	return m
}

// visitMetas are the metas {"visit": N} of a step's first visits, made
// once and shared by every entry a step writes on such a visit (see
// stepMeta: the board never changes a meta it keeps).
var visitMetas = sync.OnceValue(func() (m [16]map[string]any) {
	for i := range m {
		m[i] = map[string]any{"visit": i}
	}
	return m
})

// VisitMeta is the meta {"visit": visit} of an entry a step's visit
// writes, shared with the others alike: do not change it.
func VisitMeta(visit int) map[string]any {
	if ms := visitMetas(); visit >= 0 && visit < len(ms) {
		return ms[visit]
	}
	return map[string]any{"visit": visit}
}

func orZero(fields any, n *Node) any {
	if fields != nil {
		return fields
	}
	return zeroResult(n)
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
		Log: r.logger(n.Label), eval: r.evalOf(n), runner: r, clock: vc, node: n}
	impl, err := n.impl()
	if err != nil {
		return Result{}, err
	}
	res, err = impl.Run(ctx, sc)
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

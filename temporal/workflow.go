package temporal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/planrunner/runner/agents"
	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/engine"
	"github.com/planrunner/runner/steps"
	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Names the workflow and activity are registered under.
const (
	WorkflowName = "runner.plan"
	ActivityName = "runner.step"
	ProgressName = "runner.progress"
)

// Input starts a run: the run description (id, the plan's source and
// sha256, vars, workdir) pinned for the whole run, and, after a
// continue-as-new, where the previous part stopped.
type Input struct {
	Run     board.Run
	Options Options
	Carry   *Carry `json:",omitempty"`
	// Reuse are earlier runs whose model answers this run reuses while
	// the requests match (runner run --reuse): their paths, and their
	// blackboard.json bytes in the Store.
	Reuse []Reused `json:",omitempty"`
}

// Reused is one earlier run given to --reuse.
type Reused struct {
	Path string // as given, made absolute
	Blob string // the file's bytes in the Store
}

// Options tune the workflow; zero values take the defaults.
type Options struct {
	// HeartbeatTimeout: a step's worker that stays silent this long is
	// taken for dead and the step is run again on another (default 20s).
	HeartbeatTimeout time.Duration
	// StepTimeout bounds an activity that has no `timeout` (default 24h).
	StepTimeout time.Duration
	// The run continues as new at the next top-level step once its history
	// passes either bound (defaults 10,000 events and 8 MB; Temporal's
	// limits are 50k events and 50 MB), or when the server suggests it.
	MaxHistoryEvents int
	MaxHistoryBytes  int
}

func (o Options) withDefaults() Options {
	if o.HeartbeatTimeout <= 0 {
		o.HeartbeatTimeout = 20 * time.Second
	}
	if o.StepTimeout <= 0 {
		o.StepTimeout = 24 * time.Hour
	}
	if o.MaxHistoryEvents <= 0 {
		o.MaxHistoryEvents = 10000
	}
	if o.MaxHistoryBytes <= 0 {
		o.MaxHistoryBytes = 8 << 20
	}
	return o
}

// Carry is what a continued run starts from: the board (a chain head),
// the next top-level step and the visit counts.
type Carry struct {
	Head   string
	PC     int
	Visits map[string]int
	Total  int64
	Parts  int                // continue-as-new count so far
	Base   int                // step records before this part
	Recent []board.StepRecord // the last records, results left out, for progress
}

// Output is how the run ended and its final board's chain head.
type Output struct {
	Head   string
	Status string
	Error  string
	Parts  int
}

// Progress is what the progress query returns: step records finished
// since a given index (results left out), the steps running now, and the
// input steps waiting for an answer.
type Progress struct {
	Next    int // the index after the last record returned
	Steps   []board.StepRecord
	Running []Running
	Waiting []board.WaitingInput `json:",omitempty"`
}

// Running is a step visit under way.
type Running struct {
	Label, Parent string
	Visit         int
}

// Workflow is the interpreter. It holds the Store the board chain lives in.
type Workflow struct {
	Store Store
}

// pure step types run inside the workflow: they only read and write the
// board, so replaying them is deterministic. Everything else is an activity.
var pure = map[string]bool{"branch": true, "board": true}

// Run executes the plan in in.Run.PlanSource.
func (w *Workflow) Run(ctx workflow.Context, in Input) (*Output, error) {
	run := in.Run
	if Sum([]byte(run.PlanSource)) != run.PlanSHA256 {
		return nil, temporal.NewNonRetryableApplicationError("the plan source does not match its sha256", errBadInput, nil)
	}
	prog, err := engine.Compile(run.PlanPath, []byte(run.PlanSource), steps.Registry())
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("plan %s: %v", run.PlanPath, err), errBadInput, err)
	}
	it := &interp{store: w.Store, prog: prog, opt: in.Options.withDefaults(), in: in,
		visits: map[string]int{}, running: map[string]Running{}, answered: map[string]bool{}}
	if err := it.start(ctx); err != nil {
		panic(err) // the store failed: let the task retry rather than fail the run
	}
	if err := workflow.SetQueryHandler(ctx, ProgressName, it.progress); err != nil {
		return nil, err
	}
	if err := it.serve(ctx); err != nil {
		return nil, err
	}
	return it.run(ctx)
}

type interp struct {
	store  Store
	prog   *engine.Program
	opt    Options
	in     Input
	r      *engine.Runner
	b      *board.Board
	led    *ledger
	runCtx workflow.Context // canceled by an interrupt or the run's timeout

	visits   map[string]int
	total    int64
	startPC  int
	timedOut bool
	parts    int
	base     int
	recs     []board.StepRecord // this part's records, for progress
	running  map[string]Running
	order    []string        // running keys in start order
	answered map[string]bool // input visits answered by an update
	live     bool            // a model call of the run was answered live (see --reuse)
	ended    bool            // the run has its final status: no more writes
}

// start builds the board: new, or the carried one read back from the chain.
func (it *interp) start(ctx workflow.Context) error {
	run := it.in.Run
	it.led = &ledger{store: it.store}
	if _, err := it.store.Put([]byte(run.PlanSource)); err != nil {
		return err
	}
	if c := it.in.Carry; c != nil {
		b, err := LoadBoard(it.store, c.Head)
		if err != nil {
			return err
		}
		it.b = b
		it.led.head = c.Head
		it.led.lastSeq = lastSeq(b)
		it.startPC, it.total, it.parts, it.base = c.PC, c.Total, c.Parts, c.Base
		it.recs = c.Recent
		it.base -= len(c.Recent)
		for k, v := range c.Visits {
			it.visits[k] = v
		}
	} else {
		it.b = board.New(run)
		it.led.run = &run
	}
	it.b.SetClock(func() time.Time { return workflow.Now(ctx).UTC() })
	// Pure steps (and expressions) can hold a secret too: the board masks
	// them as a local run's does, before anything reaches the store.
	it.b.SetRedact(secretMask(it.prog.Plan).String)
	vars := engine.SavedVars(it.prog.Plan, run.Vars)
	seed := binary.LittleEndian.Uint64([]byte(Sum([]byte(run.ID))[:8]))
	rng := rand.New(rand.NewPCG(seed, uint64(it.total)))
	it.r = &engine.Runner{Prog: it.prog, Board: it.b, Log: zerolog.Nop(), Workdir: run.Workdir, Vars: vars,
		Jitter: rng.Float64, Clock: func() time.Time { return workflow.Now(ctx).UTC() }}
	it.r.Prepare()
	for _, rec := range it.b.Recordings() { // once: a continued run's
		it.live = it.live || agents.WentLive(rec)
	}
	if it.in.Carry != nil {
		for _, rec := range it.b.Steps() {
			if err := it.r.Apply(rec); err != nil {
				return err
			}
		}
	}
	return nil
}

func (it *interp) progress(since int) (Progress, error) {
	p := Progress{Next: it.base + len(it.recs)}
	if i := since - it.base; i < len(it.recs) {
		p.Steps = it.recs[max(i, 0):]
	}
	for _, k := range it.order {
		p.Running = append(p.Running, it.running[k])
	}
	p.Waiting = it.b.Run().Waiting
	return p, nil
}

func (it *interp) run(ctx workflow.Context) (*Output, error) {
	runCtx, cancelRun := workflow.WithCancel(ctx)
	it.runCtx = runCtx
	if lim := it.prog.Plan.Limits.Timeout; lim > 0 {
		left := lim - workflow.Now(ctx).Sub(it.in.Run.StartedAt)
		tctx, cancelTimer := workflow.WithCancel(ctx)
		defer cancelTimer()
		workflow.Go(tctx, func(c workflow.Context) {
			if left > 0 && workflow.Sleep(c, left) != nil {
				return
			}
			it.timedOut = true
			cancelRun()
		})
	}
	err := it.top(runCtx)
	var can *workflow.ContinueAsNewError
	if errors.As(err, &can) {
		return nil, err
	}
	return it.finish(ctx, err)
}

// top walks the top-level steps, following gotos, and continues as new at
// a step boundary when the history grows large.
func (it *interp) top(ctx workflow.Context) error {
	list := it.prog.Steps
	for pc := it.startPC; pc < len(list); {
		if stop := it.stopped(ctx); stop != nil {
			return stop
		}
		if it.tooLong(ctx) {
			return it.continueAsNew(ctx, pc)
		}
		jump, err := it.visit(ctx, list[pc], "")
		if err != nil {
			return err
		}
		if pc, err = it.prog.Next(pc, jump); err != nil {
			return err
		}
	}
	return nil
}

func (it *interp) tooLong(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetCurrentHistoryLength() >= it.opt.MaxHistoryEvents ||
		info.GetCurrentHistorySize() >= it.opt.MaxHistoryBytes || info.GetContinueAsNewSuggested()
}

// continueAsNew writes the whole board as one chunk (so the next part and
// the workers read one blob, not the whole chain) and starts the next part.
func (it *interp) continueAsNew(ctx workflow.Context, pc int) error {
	run := it.b.Run()
	c := &chunk{Run: &run, Entries: it.b.Entries(), Steps: it.b.Steps(), Recordings: it.b.Recordings()}
	head, err := putChunk(it.store, c)
	if err != nil {
		panic(err)
	}
	recent := it.recs
	if len(recent) > 64 {
		recent = recent[len(recent)-64:]
	}
	in := it.in
	in.Carry = &Carry{Head: head, PC: pc, Visits: it.visits, Total: it.total, Parts: it.parts + 1,
		Base: it.base + len(it.recs), Recent: recent}
	return workflow.NewContinueAsNewError(ctx, WorkflowName, in)
}

// stopped reports why ctx ended, if it did: an interrupt (the workflow was
// canceled) or the run's timeout. A group's fail_fast cancel is not the
// run's business.
func (it *interp) stopped(ctx workflow.Context) *engine.RunError {
	if ctx.Err() == nil {
		return nil
	}
	if it.runCtx.Err() == nil {
		return nil // a sibling failed: the group's business
	}
	if it.timedOut {
		return &engine.RunError{Status: engine.StatusFailed, Fatal: true,
			Err: engine.TimeoutCause(it.prog.Plan.Limits.Timeout)}
	}
	return &engine.RunError{Status: engine.StatusInterrupted, Err: engine.ErrInterrupted, Fatal: true}
}

func (it *interp) siblingCanceled(ctx workflow.Context) bool {
	return ctx.Err() != nil && it.runCtx.Err() == nil
}

// visit runs one step (or group) once, records it and says where to go:
// engine.Runner.visit, with durable timers and activities.
func (it *interp) visit(ctx workflow.Context, n *engine.Node, parent string) (string, error) {
	it.visits[n.Label]++
	visit := it.visits[n.Label]
	if err := engine.VisitLimit(n, visit); err != nil {
		return "", err
	}
	it.total++
	if err := engine.StepsLimit(it.prog, n, it.total); err != nil {
		return "", err
	}
	key := fmt.Sprintf("%s#%d", n.Label, visit)
	it.running[key] = Running{Label: n.Label, Visit: visit, Parent: parent}
	it.order = append(it.order, key)
	defer it.done(key)
	rec := board.StepRecord{Label: n.Label, Visit: visit, Type: n.Type, Parent: parent, StartedAt: workflow.Now(ctx).UTC()}
	v := it.r.BeginVisit(n.Label, visit)

	var res engine.Result
	var stepErr error
	status := engine.StatusSucceeded
	run := true
	if ok, err := it.r.EvalIf(n, v); err != nil {
		stepErr, run = fmt.Errorf("if: %w", err), false
	} else if !ok {
		status, run = engine.StatusSkipped, false
	}
	if run {
		if n.Children != nil {
			res, stepErr = it.group(ctx, n, visit)
		} else {
			res, stepErr = it.attempts(ctx, n, v, visit, &rec)
		}
	}
	stop := it.stopped(ctx)
	if stepErr != nil {
		status = engine.StatusFailed
		switch {
		case stop != nil:
			status = engine.StatusInterrupted
		case !fatal(stepErr) && !errors.Is(stepErr, engine.SiblingFailed) && it.siblingCanceled(ctx):
			stepErr = fmt.Errorf("%w (%v)", engine.SiblingFailed, stepErr)
		}
	}
	if stepErr == nil && res.Goto != "" && parent != "" {
		stepErr, status = fmt.Errorf("goto %q inside a parallel group is not allowed", res.Goto), engine.StatusFailed
	}
	rec.Status = status
	rec.FinishedAt = workflow.Now(ctx).UTC()
	rec.DurationMS = rec.FinishedAt.Sub(rec.StartedAt).Milliseconds()
	rec.Goto = res.Goto
	if stepErr != nil {
		rec.Error = stepErr.Error()
	}
	if err := it.record(n, &rec, res, v); err != nil {
		if !errors.Is(err, board.ErrVersion) && !errors.Is(err, board.ErrDenied) {
			return "", &engine.RunError{Status: engine.StatusFailed, Label: n.Label, Err: err, Fatal: true}
		}
		stepErr, status = err, engine.StatusFailed
		rec.Status, rec.Error, res.Write, res.Goto = status, err.Error(), nil, ""
		if err := it.record(n, &rec, res, v); err != nil {
			return "", &engine.RunError{Status: engine.StatusFailed, Label: n.Label, Err: err, Fatal: true}
		}
	}
	switch {
	case fatal(stepErr):
		return "", stepErr
	case stop != nil && stepErr != nil:
		stop.Label = n.Label
		return "", stop
	case stepErr != nil && !n.ContinueOnError:
		return "", &engine.RunError{Status: engine.StatusFailed, Label: n.Label, Err: stepErr}
	}
	return res.Goto, nil
}

func (it *interp) done(key string) {
	delete(it.running, key)
	for i, k := range it.order {
		if k == key {
			it.order = append(it.order[:i], it.order[i+1:]...)
			break
		}
	}
}

func (it *interp) record(n *engine.Node, rec *board.StepRecord, res engine.Result, v engine.Visit) error {
	if err := it.r.Record(n, rec, res, v); err != nil {
		return err
	}
	*rec, _ = it.b.LastStep() // as the board keeps it: masked
	it.led.steps = append(it.led.steps, *rec)
	p := *rec
	p.Result = nil
	it.recs = append(it.recs, p)
	return nil
}

// attempts runs a leaf step, retrying as its `retry` says; the backoff is
// a durable timer.
func (it *interp) attempts(ctx workflow.Context, n *engine.Node, v engine.Visit, visit int, rec *board.StepRecord) (engine.Result, error) {
	for attempt := 1; ; attempt++ {
		rec.Attempts = attempt
		res, err := it.once(ctx, n, v, visit, attempt)
		if err == nil {
			if uerr, final := it.r.CheckUntil(n, v, visit, attempt, res); uerr != nil {
				if final {
					return res, uerr
				}
				err = uerr
			}
		}
		if err == nil || n.Retry == nil || attempt > n.Retry.Max || it.stopped(ctx) != nil {
			return res, err
		}
		delay := it.r.Backoff(n, attempt)
		rec.Delays = append(rec.Delays, delay.Milliseconds())
		if serr := workflow.Sleep(ctx, delay); serr != nil {
			return res, err
		}
	}
}

// once runs one attempt: a pure step here, any other as an activity.
func (it *interp) once(ctx workflow.Context, n *engine.Node, v engine.Visit, visit, attempt int) (engine.Result, error) {
	if pure[n.Type] {
		return it.r.RunOnce(context.Background(), n, v, visit, attempt)
	}
	if n.Type == "input" {
		return it.input(ctx, n, v, visit, attempt)
	}
	head, err := it.led.flush(it.b)
	if err != nil {
		panic(err) // the store failed: retry the workflow task
	}
	timeout := it.opt.StepTimeout
	if n.Timeout > 0 {
		timeout = n.Timeout + time.Minute // the step enforces its own; this is the backstop
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: timeout,
		HeartbeatTimeout:    it.opt.HeartbeatTimeout,
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: 30 * time.Second, MaximumAttempts: 20, NonRetryableErrorTypes: []string{errBadInput}},
	})
	run := it.in.Run
	var out StepOutput
	in := StepInput{PlanPath: run.PlanPath, PlanSHA256: run.PlanSHA256,
		Head: head, Label: n.Label, Visit: visit, Attempt: attempt, Workdir: run.Workdir, Vars: run.Vars}
	for _, r := range it.in.Reuse {
		in.Reuse = append(in.Reuse, r.Blob)
	}
	in.ReuseLive = len(in.Reuse) > 0 && it.live
	err = workflow.ExecuteActivity(actx, ActivityName, in).Get(actx, &out)
	if err != nil {
		var canceled *temporal.CanceledError
		if errors.As(err, &canceled) || ctx.Err() != nil {
			return engine.Result{}, errors.New("canceled")
		}
		return engine.Result{}, fmt.Errorf("on Temporal: %w", err)
	}
	for _, e := range out.Entries {
		if _, err := it.b.Append(e); err != nil {
			return engine.Result{}, err
		}
	}
	for _, r := range out.Recordings {
		it.addRecording(r)
	}
	res, err := engine.DecodeResult(n, out.Result)
	if err != nil {
		return res, err
	}
	res.Goto, res.Write = out.Goto, out.Write
	if out.Error != "" {
		return res, errors.New(out.Error)
	}
	return res, nil
}

// input runs an input step in the workflow: where a run in one process
// saves and ends as waiting, a run on Temporal waits durably for an
// answer (the runner.answer update) or the step's timeout, with no worker
// busy meanwhile.
func (it *interp) input(ctx workflow.Context, n *engine.Node, v engine.Visit, visit, attempt int) (engine.Result, error) {
	for {
		res, err := it.r.RunOnce(context.Background(), n, v, visit, attempt)
		if !errors.Is(err, engine.ErrWaiting) {
			return res, err
		}
		key := visitKey(n.Label, visit)
		answered := func() bool { return it.answered[key] }
		w, _ := steps.WaitingInput(it.b.Run(), n.Label, visit)
		if w.Deadline == nil {
			err = workflow.Await(ctx, answered)
		} else if left := w.Deadline.Sub(workflow.Now(ctx)); left > 0 {
			_, err = workflow.AwaitWithTimeout(ctx, left, answered)
		}
		if err != nil {
			return engine.Result{}, errors.New("canceled")
		}
	}
}

// group runs a parallel step's children as workflow coroutines, at most
// max_concurrency at a time; with fail_fast the first failure cancels the
// others, and those not started yet do not start.
func (it *interp) group(ctx workflow.Context, n *engine.Node, visit int) (engine.Result, error) {
	gctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	limit := n.MaxConcurrency
	if limit <= 0 || limit > len(n.Children) {
		limit = len(n.Children)
	}
	sem := workflow.NewSemaphore(ctx, int64(limit))
	errs := make([]error, len(n.Children))
	wg := workflow.NewWaitGroup(ctx)
	for i, c := range n.Children {
		wg.Add(1)
		workflow.Go(gctx, func(cctx workflow.Context) {
			defer wg.Done()
			if err := sem.Acquire(cctx, 1); err != nil || cctx.Err() != nil {
				if err == nil {
					sem.Release(1)
				}
				errs[i] = it.notStarted(cctx, c, n.Label)
				return
			}
			defer sem.Release(1)
			if _, err := it.visit(cctx, c, n.Label); err != nil {
				errs[i] = err
				if n.FailFast {
					cancel()
				}
			}
		})
	}
	wg.Wait(ctx)
	return it.groupResult(n, errs)
}

func (it *interp) groupResult(n *engine.Node, errs []error) (engine.Result, error) {
	res := engine.Result{Output: it.r.GroupOutput(n)}
	var failed []error
	for _, err := range errs {
		if fatal(err) {
			return res, err
		}
		if err != nil && !errors.Is(err, engine.SiblingFailed) {
			failed = append(failed, err)
		}
	}
	switch len(failed) {
	case 0:
		return res, nil
	case 1:
		return res, failed[0]
	}
	return res, fmt.Errorf("%d steps failed; first: %w", len(failed), failed[0])
}

// notStarted records a child that never ran because its group was
// canceled before its turn.
func (it *interp) notStarted(ctx workflow.Context, c *engine.Node, parent string) error {
	if stop := it.stopped(ctx); stop != nil {
		return stop
	}
	it.visits[c.Label]++
	now := workflow.Now(ctx).UTC()
	rec := board.StepRecord{Label: c.Label, Visit: it.visits[c.Label], Type: c.Type, Parent: parent,
		Status: engine.StatusSkipped, StartedAt: now, FinishedAt: now, Error: engine.NotStartedError}
	if err := it.record(c, &rec, engine.Result{}, it.r.BeginVisit(c.Label, rec.Visit)); err != nil {
		return &engine.RunError{Status: engine.StatusFailed, Label: c.Label, Err: err, Fatal: true}
	}
	return engine.SiblingFailed
}

// finish marks the run's final status and writes the last chunk.
func (it *interp) finish(ctx workflow.Context, err error) (*Output, error) {
	status, msg := engine.StatusSucceeded, ""
	if err != nil {
		var re *engine.RunError
		if !errors.As(err, &re) {
			re = &engine.RunError{Status: engine.StatusFailed, Err: err}
		}
		status, msg = re.Status, re.Error()
	}
	it.ended = true
	now := workflow.Now(ctx).UTC()
	var reused *board.Reused
	if len(it.in.Reuse) > 0 {
		// What --reuse took, read from the recordings: each worker saw
		// only its own calls.
		st := agents.StatsOf(it.b.Recordings())
		reused = &board.Reused{ReusedCalls: st.ReusedCalls, ReusedTokens: st.ReusedTokens, LiveCalls: st.LiveCalls, LiveTokens: st.LiveTokens}
		for _, r := range it.in.Reuse {
			reused.From = append(reused.From, r.Path)
		}
	}
	if uerr := it.b.UpdateRun(func(r *board.Run) {
		r.Status, r.Error, r.FinishedAt = status, msg, &now
		if reused != nil {
			r.Reused = reused
		}
	}); uerr != nil {
		return nil, uerr
	}
	run := it.b.Run()
	it.led.run = &run
	head, ferr := it.led.flush(it.b)
	if ferr != nil {
		panic(ferr)
	}
	return &Output{Head: head, Status: status, Error: run.Error, Parts: it.parts}, nil // run.Error as the board keeps it: masked
}

func fatal(err error) bool {
	var re *engine.RunError
	return errors.As(err, &re) && re.Fatal
}

package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/steps"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The workflow is engine.Drive's driver: the engine's interpreter decides
// every visit, attempt, group and stop as a run in one process does, and
// this file gives it durable time, coroutines, activities and the
// workflow's own concerns (continue-as-new, the running set, the ledger).

// wctx is the driver's context: a workflow context and the chain of
// cancellations above it, which carry their causes as context.Cause does
// (a workflow context has none).
type wctx struct {
	ctx  workflow.Context
	node *cancelNode
}

// cancelNode is one WithCancel. A context's cause is that of the first
// of its ancestors to be canceled (seq orders the cancellations), as a
// canceled parent cancels its children first in a context.Context.
type cancelNode struct {
	parent *cancelNode
	cause  error
	seq    int
}

var _ engine.Driver[wctx] = (*interp)(nil)

// observe notes the workflow's cancellation (an interrupt from outside)
// on the root node the first time it is seen, so that what was canceled
// before it keeps its own cause.
func (it *interp) observe(n *cancelNode) {
	for ; n != nil; n = n.parent {
		if n.parent == nil && n.cause == nil && it.root.Err() != nil {
			it.seq++
			n.cause, n.seq = engine.ErrInterrupted, it.seq
		}
	}
}

func (it *interp) Cause(c wctx) error {
	it.observe(c.node)
	var first *cancelNode
	for n := c.node; n != nil; n = n.parent {
		if n.cause != nil && (first == nil || n.seq < first.seq) {
			first = n
		}
	}
	if first == nil {
		return nil
	}
	return first.cause
}

func (it *interp) WithCancel(c wctx) (wctx, func(error)) {
	ctx, cancel := workflow.WithCancel(c.ctx)
	n := &cancelNode{parent: c.node}
	return wctx{ctx, n}, func(cause error) {
		if n.cause == nil {
			it.observe(n)
			if cause == nil {
				cause = context.Canceled
			}
			it.seq++
			n.cause, n.seq = cause, it.seq
		}
		cancel()
	}
}

func (it *interp) Now(c wctx) time.Time { return workflow.Now(c.ctx).UTC() }

// Sleep is a durable timer.
func (it *interp) Sleep(c wctx, d time.Duration) error {
	if err := workflow.Sleep(c.ctx, d); err != nil {
		if cause := it.Cause(c); cause != nil {
			return cause
		}
		return err
	}
	return nil
}

// Parallel runs the children as coroutines, each made once it has its
// slot: they start in plan order, as in one process.
func (it *interp) Parallel(c wctx, n, limit int, child func(wctx, int, bool)) {
	sem := workflow.NewSemaphore(c.ctx, int64(limit))
	wg := workflow.NewWaitGroup(c.ctx)
	for i := range n {
		started := false
		if err := sem.Acquire(c.ctx, 1); err == nil {
			if started = c.ctx.Err() == nil; !started {
				sem.Release(1)
			}
		}
		if !started {
			child(c, i, false)
			continue
		}
		wg.Add(1)
		workflow.Go(c.ctx, func(cc workflow.Context) {
			defer wg.Done()
			defer sem.Release(1)
			child(wctx{cc, c.node}, i, true)
		})
	}
	wait, _ := workflow.NewDisconnectedContext(c.ctx) // every child returns, canceled or not
	wg.Wait(wait)
}

// Await waits in the coroutine until ready holds, a canceled workflow
// context notwithstanding (a child waits for its needs to return, as in
// one process).
func (it *interp) Await(c wctx, ready func() bool) {
	wait, _ := workflow.NewDisconnectedContext(c.ctx)
	_ = workflow.Await(wait, ready)
}

// Leaf runs a pure step here, waits here for an input's answer, and
// sends any other step to a worker as an activity.
func (it *interp) Leaf(c wctx, a engine.Attempt) (engine.Result, error) {
	switch a.Sched() {
	case engine.SchedPure:
		return a.Run(it.stepContext(c))
	case engine.SchedWaits:
		return it.input(c, a)
	}
	return it.activity(c, a)
}

// stepContext is the context a step run in the workflow gets: ended, with
// c's cause, when c has ended, as a step run in one process finds it.
func (it *interp) stepContext(c wctx) context.Context {
	ctx := context.Background()
	if cause := it.Cause(c); cause != nil {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		cancel(cause)
	}
	return ctx
}

// BeforeTop continues as new at a top-level step boundary when the
// history grows large.
func (it *interp) BeforeTop(c wctx, pc int) error {
	it.topPC = pc
	if it.tooLong(c.ctx) {
		return it.continueAsNew(c.ctx, pc, false)
	}
	return nil
}

func (it *interp) Visiting(label, parent string, visit int) {
	key := visitKey(label, visit)
	it.running[key] = Running{Label: label, Visit: visit, Parent: parent}
	it.order = append(it.order, key)
}

func (it *interp) Visited(label string, visit int) {
	key := visitKey(label, visit)
	delete(it.running, key)
	delete(it.inflight, label)
	for i, k := range it.order {
		if k == key {
			it.order = append(it.order[:i], it.order[i+1:]...)
			break
		}
	}
}

// Recorded keeps the record as the board keeps it (masked) for the
// ledger's next flush and the progress query.
func (it *interp) Recorded(n *engine.Node) {
	it.fanOutEnded(n.Label)
	rec, _ := it.b.LastStep()
	it.led.steps = append(it.led.steps, rec)
	rec.Result = nil
	it.recs = append(it.recs, rec)
}

// beside reports whether steps other than label and the groups around it
// are running: label's head may then be older than a worker's copy of the
// run by the time it gets there (StepInput.Beside).
func (it *interp) beside(label string) bool {
	parent := make(map[string]string, len(it.running))
	for _, r := range it.running {
		parent[r.Label] = r.Parent
	}
	around := map[string]bool{label: true}
	for l := parent[label]; l != "" && !around[l]; l = parent[l] {
		around[l] = true
	}
	for _, r := range it.running {
		if !around[r.Label] {
			return true
		}
	}
	return false
}

// chunkWithStep versions a step that carries the board's newest chunk
// to its worker (ledger.take): earlier histories put it first.
const chunkWithStep = "chunk-with-step"

// alone reports whether the step starting now is the only one running,
// at the top level (no group around it whose other children may flush).
func (it *interp) alone() bool {
	if len(it.running) != 1 {
		return false
	}
	for _, r := range it.running {
		if r.Parent != "" {
			return false
		}
	}
	return true
}

// activity runs one attempt on a worker, the board flushed to the store
// first (or handed to the worker with the step) so that the worker reads
// what the step may read.
func (it *interp) activity(c wctx, a engine.Attempt) (engine.Result, error) {
	ctx, n := c.ctx, a.Node
	var head string
	var chunk []byte
	var err error
	if it.alone() && !it.io.direct && workflow.GetVersion(ctx, chunkWithStep, workflow.DefaultVersion, 1) >= 1 {
		chunk, err = it.led.take(ctx, it.b) // the step's worker puts it
		head = it.led.head
	} else {
		head, err = it.led.flush(ctx, it.b)
	}
	if err != nil {
		if it.io.direct {
			panic(err) // the store failed: retry the workflow task (histories from before storeActivities)
		}
		return engine.Result{}, err
	}
	timeout := it.opt.StepTimeout
	if n.Timeout > 0 {
		timeout = n.Timeout + time.Minute // the step enforces its own; this is the backstop
	}
	ao := workflow.ActivityOptions{
		StartToCloseTimeout: timeout,
		HeartbeatTimeout:    it.opt.HeartbeatTimeout,
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: 30 * time.Second, MaximumAttempts: 20, NonRetryableErrorTypes: []string{errBadInput}},
	}
	if workflow.GetVersion(ctx, namedActivities, workflow.DefaultVersion, 1) >= 1 {
		// The Web UI and `temporal workflow describe` show which step an
		// activity is: label#visit (for_each items are LABEL[i]), and a
		// summary of what it does.
		ao.ActivityID, ao.Summary = activityID(n.Label, a.Visit, a.Attempt), activitySummary(n)
	}
	actx := workflow.WithActivityOptions(ctx, ao)
	run := it.in.Run
	var out StepOutput
	in := StepInput{PlanPath: run.PlanPath, PlanSHA256: run.PlanSHA256,
		Head: head, Label: n.Label, Visit: a.Visit, Attempt: a.Attempt, Workdir: run.Workdir, Vars: run.Vars}
	if chunk != nil {
		in.Head, in.Chunk = "", chunk
	}
	if _, item, ok := n.ItemOf(); ok {
		in.Item = item
	}
	in.Beside = it.beside(n.Label)
	for _, r := range it.in.Reuse {
		in.Reuse = append(in.Reuse, r.Blob)
	}
	in.ReuseLive = len(in.Reuse) > 0 && it.live
	in.StoreID = it.in.StoreID
	in.Code = it.in.Code
	lostWithHost := 0
	fo, idx, err := it.spreadOf(ctx, n)
	if err != nil {
		return engine.Result{}, fmt.Errorf("on Temporal: %w", err)
	}
	var start string
	if fo != nil {
		// Any worker runs the step, from its unit's workspace: the one
		// the fan-out started with or the one the unit's last step (or
		// the step's previous attempt) left (spread.go).
		start = fo.latest(idx)
		in.Workspace = start
		err = it.anyNewer(actx, SpreadName, in, &out)
	} else if it.pinned(ctx) {
		if err := it.settle(ctx); err != nil {
			return engine.Result{}, fmt.Errorf("on Temporal: %w", err)
		}
		// The step runs on the run's host, in its copy of the workspace:
		// in this workflow task when its worker is the host (local.go).
		for {
			if it.asLocalOnHost(ctx, n) {
				local := in
				local.OnlyHost, local.Workspace, local.Copy, local.WorkspaceSeq = it.host, it.ws, it.copy, it.wsSeq
				err = it.runLocal(ctx, n, local, &out)
				if err == nil && out.Elsewhere {
					it.notHost = it.host
					out = StepOutput{}
					continue
				}
			} else {
				err = it.onHost(ctx, ao, ActivityName, func(shared bool) any {
					if !shared {
						in.Workspace, in.Copy, in.WorkspaceSeq = it.ws, it.copy, it.wsSeq
					}
					return in
				}, &out, &lostWithHost)
			}
			if err == nil && it.copy != "" && out.Copy != "" && out.Copy != it.copy {
				// It ran in a copy the run has left since (its host was
				// taken for lost): what it did to the files is not in the
				// copy the run goes on with, so it runs again there.
				lostWithHost++
				out = StepOutput{}
				continue
			}
			break
		}
		it.keep(&out)
	} else if it.asLocal(ctx, n) {
		err = it.runLocal(ctx, n, in, &out) // local.go
	} else {
		err = it.anyNewer(actx, ActivityName, in, &out)
	}
	if chunk != nil {
		name := ""
		if err == nil {
			name = out.Head
		}
		if lerr := it.led.landed(ctx, chunk, name); lerr != nil {
			return engine.Result{}, fmt.Errorf("on Temporal: %w", lerr)
		}
	}
	// A step stopped by its context fails with the context's cause, as in
	// one process; the activity's own context knows only that it was
	// canceled, so the cause is the workflow's.
	cause := it.Cause(c)
	if err != nil {
		var canceled *temporal.CanceledError
		if !errors.As(err, &canceled) && cause == nil {
			return engine.Result{}, fmt.Errorf("on Temporal: %w", err)
		}
		out = StepOutput{}
		if canceled == nil || !canceled.HasDetails() || canceled.Details(&out) != nil {
			out = StepOutput{} // canceled before it ran: nothing learned
		}
		if cause == nil {
			cause = errors.New("canceled")
		}
		out.Error = cause.Error()
	}
	if fo != nil && out.Workspace != "" {
		if err := it.intoUnit(ctx, fo, idx, start, out.Workspace); err != nil {
			return engine.Result{}, fmt.Errorf("on Temporal: %w", err)
		}
	}
	for _, e := range out.Entries {
		if _, err := it.b.Append(e); err != nil {
			return engine.Result{}, err
		}
	}
	for _, r := range out.Recordings {
		it.addRecording(r)
	}
	res, err := engine.DecodeResult(n, json.RawMessage(out.Result))
	if err != nil {
		return res, err
	}
	res.Goto, res.Write = out.Goto, out.Write
	res.SetInputs(out.Inputs)
	res.Host = out.Host
	res.Reruns = max(int(out.Attempt)-1, 0) + lostWithHost
	switch {
	case out.Error != "" && cause != nil:
		return res, cause
	case out.Error != "":
		return res, errors.New(out.Error)
	}
	return res, nil
}

// input runs an input step in the workflow: where a run in one process
// saves and ends as waiting, a run on Temporal waits durably for an
// answer (the runner.answer update) or the step's timeout, with no worker
// busy meanwhile.
func (it *interp) input(c wctx, a engine.Attempt) (engine.Result, error) {
	ctx, label, visit := c.ctx, a.Node.Label, a.Visit
	for {
		res, err := a.Run(it.stepContext(c))
		if !errors.Is(err, engine.ErrWaiting) {
			return res, err
		}
		key := visitKey(label, visit)
		answered := func() bool { return it.answered[key] }
		w, _ := steps.WaitingInput(it.b.Run(), label, visit)
		it.upsert(ctx, saWaiting.ValueSet(true))
		if w.Deadline == nil {
			err = workflow.Await(ctx, answered)
		} else if left := w.Deadline.Sub(workflow.Now(ctx)); left > 0 {
			_, err = workflow.AwaitWithTimeout(ctx, left, answered)
		}
		it.upsert(ctx, saWaiting.ValueSet(len(it.b.Run().Waiting) > 0))
		if err != nil {
			return engine.Result{}, errors.New("canceled")
		}
	}
}

// namedActivities versions the change that gave activities the ids and
// summaries of their steps: earlier histories keep the SDK's numbers.
const namedActivities = "named-activities"

// activityID is a step attempt's activity id: label#visit, and .attempt
// from the second attempt of a step's retry on (Temporal's own retries of
// one attempt keep its id).
func activityID(label string, visit, attempt int) string {
	id := fmt.Sprintf("%s#%d", label, visit)
	if attempt > 1 {
		id += fmt.Sprintf(".%d", attempt)
	}
	return id
}

// activitySummary is the one line the UI shows beside an activity: the
// step's type and what a dry run says of it (templates as written, never
// a rendered value, so no secret), cut to 200 bytes.
func activitySummary(n *engine.Node) string {
	s := n.Label
	if n.Kind != nil {
		s += " (" + n.Kind.Name() + ")"
	}
	if d, ok := n.Impl.(engine.Describer); ok {
		if text := d.Describe(); text != "" {
			first, _, _ := strings.Cut(text, "\n")
			s += ": " + first
		}
	}
	if len(s) > 200 {
		cut := 197
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

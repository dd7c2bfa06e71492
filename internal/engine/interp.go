package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// Driver is what the interpreter needs from whoever schedules a plan's
// steps: this process (goroutines, timers, the step's Run) or a Temporal
// workflow (coroutines, durable timers, activities). The interpreter in
// this file (visits, attempts, groups, fail_fast, stops, records) is
// written once against it, so both engines decide every step the same
// way. C is the scheduler's context: context.Context in this process.
type Driver[C any] interface {
	// Cause is nil while c is live; else why it ended (like context.Cause):
	// ErrInterrupted for a stop, TimeoutCause for limits.timeout, the
	// cause given to a WithCancel's cancel.
	Cause(c C) error
	// WithCancel derives a context that cancel(cause) ends, with that
	// cause unless c ended first.
	WithCancel(c C) (C, func(cause error))
	// Now is the time a step visit starts or finishes.
	Now(c C) time.Time
	// Sleep waits d, or until c ends (then it returns Cause(c)).
	Sleep(c C, d time.Duration) error
	// Parallel runs child(c, i, true) for i from 0 to n-1, starting them
	// in index order, at most limit at once, and returns when all have
	// returned. A child whose turn comes (a slot is free, the ones before
	// it started or refused) after c ended is not started:
	// child(c, i, false) is called instead.
	Parallel(c C, n, limit int, child func(c C, i int, started bool))
	// Await returns once ready() holds, whether or not c has ended; ready
	// may change when a child of Parallel returns. (A group's child
	// waiting for the siblings it needs.)
	Await(c C, ready func() bool)
	// Leaf runs one attempt of a leaf step (see Attempt).
	Leaf(c C, a Attempt) (Result, error)
	// BeforeTop is asked before each top-level step; an error ends the
	// run with it (a Temporal workflow's continue-as-new).
	BeforeTop(c C, pc int) error
	// Visiting is told when a step visit starts, and Visited when it ends
	// (recorded or not): what runs now, for a progress query.
	Visiting(label, parent string, visit int)
	Visited(label string, visit int)
	// Recorded is told when a step record was added to the board.
	Recorded(n *Node)
}

// Attempt is one attempt of a leaf step visit, for Driver.Leaf.
type Attempt struct {
	Node           *Node
	Visit, Attempt int
	r              *Runner
	vc             *visitClock
}

// Sched is how the step's type is scheduled (see Caps.Sched).
func (a Attempt) Sched() Sched { return SchedOf(a.Node.Kind) }

// Run runs the attempt in this process, with the step's timeout, as a
// run in one process does; a panic in the step type becomes its error.
func (a Attempt) Run(ctx context.Context) (Result, error) {
	return a.r.once(ctx, a.Node, a.Visit, a.Attempt, a.vc)
}

// Drive runs the plan's top-level steps from index pc on, following
// gotos, with d scheduling them: the interpreter both engines share. It
// records every visit on r.Board; the caller marks the run's end.
func Drive[C any](c C, r *Runner, d Driver[C], pc int) error {
	r.init()
	it := &interp[C]{r: r, d: d}
	if r.Script != nil {
		// Only a replay ends the run from inside (Script.Cut). A context
		// canceled at the end would cancel what a workflow left pending
		// (an answered input's timer): commands its old histories lack.
		var cut func(error)
		c, cut = d.WithCancel(c)
		defer cut(nil)
		it.cut = cut
	}
	return it.top(c, pc)
}

type interp[C any] struct {
	r   *Runner
	d   Driver[C]
	cut func(error) // ends the run (Script.Cut)
}

func (it *interp[C]) top(c C, pc int) error {
	steps := it.r.Prog.Steps
	for pc < len(steps) {
		if stop := it.stopped(c); stop != nil {
			return stop
		}
		if err := it.d.BeforeTop(c, pc); err != nil {
			return err
		}
		jump, err := it.visit(c, steps[pc], "")
		if err != nil {
			return err
		}
		if pc, err = it.r.Prog.Next(pc, jump); err != nil {
			return err
		}
	}
	return nil
}

// stopped reports why the run's context ended, if it did.
func (it *interp[C]) stopped(c C) *RunError {
	cause := it.d.Cause(c)
	switch {
	case cause == nil, errors.Is(cause, errSiblingFailed):
		return nil // a sibling's fail_fast is the group's business, not the run's
	case errors.Is(cause, ErrInterrupted) || errors.Is(cause, context.Canceled):
		return &RunError{Status: StatusInterrupted, Err: ErrInterrupted, Fatal: true}
	}
	return &RunError{Status: StatusFailed, Err: cause, Fatal: true}
}

// nextVisitOf counts a visit of label and returns its number.
func (r *Runner) nextVisitOf(label string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.visits.add(label, 1)
}

// visit runs one step (or group) once, records it, and says where to go.
func (it *interp[C]) visit(c C, n *Node, parent string) (jump string, err error) {
	r := it.r
	visit := r.nextVisitOf(n.Label)
	if err := visitLimit(n, visit); err != nil {
		return "", err
	}
	if err := stepsLimit(r.Prog, n, r.total.Add(1)); err != nil {
		return "", err
	}
	var finish time.Time
	start := it.d.Now(c)
	if r.Script != nil {
		if r.Script.Ends(n.Label, visit) {
			return "", &RunError{Status: StatusInterrupted, Label: n.Label, Err: ErrEnded, Fatal: true}
		}
		if cause := r.Script.Cut(n.Label, visit); cause != nil {
			it.cut(cause)
		}
		if s, f, ok := r.Script.Times(n.Label, visit); ok {
			start, finish = s, f
		} else if stop := it.stopped(c); stop != nil {
			return "", stop // the run was stopped before this visit, as recorded: nothing of it is saved
		}
	}
	it.d.Visiting(n.Label, parent, visit)
	defer it.d.Visited(n.Label, visit)
	if r.Observer != nil {
		r.Observer.StepStarted(n.Label, visit, parent)
	}
	log := r.logger(n.Label)
	log.Debug().Int("visit", visit).Msg("start")
	rec := board.StepRecord{Label: n.Label, Visit: visit, Type: n.Type, Parent: parent, StartedAt: start}
	vc := r.clockFor(n.Label, visit, parent != "")
	vc.item = n.item

	var res Result
	var stepErr error
	status := StatusSucceeded
	run := true
	if n.If != nil {
		ok, err := r.evalOf(n).bool(n.If, nil, vc)
		switch {
		case err != nil:
			stepErr, run = fmt.Errorf("if: %w", err), false
		case !ok:
			status, run = StatusSkipped, false
		}
	}
	if run {
		if n.Each != nil || n.Children != nil || n.Seq != nil || n.Sub != nil {
			switch {
			case n.Each != nil:
				res, stepErr = it.forEach(c, n, visit, vc)
			case n.Sub != nil:
				res, stepErr = it.call(c, n, visit, vc)
			case n.Seq != nil:
				res, stepErr = it.sequence(c, n, visit)
			default:
				res, stepErr = it.group(c, n, visit)
			}
			if pre, ok := stepErr.(childrenNotRun); ok {
				stepErr = pre.error
			} else {
				stepErr = it.afterChildren(n, visit, stepErr)
			}
		} else {
			res, stepErr = it.attempts(c, n, visit, &rec, vc)
		}
	}
	if errors.Is(stepErr, ErrContinued) {
		r.unvisit(n.Label) // the next part enters this visit again (continue.go)
		return "", stepErr
	}
	if errors.Is(stepErr, ErrEnded) {
		return "", stepErr // the recording ends inside: nothing of this visit is saved
	}
	if isWaiting(stepErr) {
		log.Info().Int("visit", visit).Msg("waiting for an answer")
		return "", waitingErr(n.Label, stepErr) // nothing of this visit is saved: resume asks again
	}
	stop := it.stopped(c)
	if stop != nil && !finish.IsZero() {
		// A replay runs a group's children one at a time: the run may be
		// stopped here, replayed, while this visit finished before the
		// stop as recorded (beside the sibling the stop came during).
		if s, ok := r.Script.(StopScript); ok && !s.Stopped(n.Label, visit) {
			stop = nil
		}
	}
	if stepErr != nil {
		status = StatusFailed
		switch {
		case stop != nil:
			status = StatusCanceled
		case !fatal(stepErr) && !errors.Is(stepErr, errSiblingFailed) && errors.Is(it.d.Cause(c), errSiblingFailed):
			stepErr = fmt.Errorf("%w (%v)", errSiblingFailed, stepErr)
			status = StatusCanceled
		case errors.Is(stepErr, errSiblingFailed):
			status = StatusCanceled // a group whose children were canceled, not failed
		}
	}
	if stepErr == nil && res.Goto != "" && parent != "" && !n.inSequence() {
		where := "inside a parallel group"
		if n.item != nil {
			where = "in a for_each item"
		}
		stepErr, status = fmt.Errorf("goto %q %s is not allowed", res.Goto, where), StatusFailed
	}
	rec.Status = status
	rec.FinishedAt = finish
	if finish.IsZero() {
		rec.FinishedAt = it.d.Now(c)
	}
	rec.DurationMS = rec.FinishedAt.Sub(rec.StartedAt).Milliseconds()
	rec.Goto = res.Goto
	if stepErr != nil {
		rec.Error = stepErr.Error()
	}
	if err := it.record(n, &rec, res, vc); err != nil {
		if !errors.Is(err, board.ErrVersion) && !errors.Is(err, board.ErrDenied) && !errors.Is(err, board.ErrHeld) {
			return "", &RunError{Status: StatusFailed, Label: n.Label, Err: err, Fatal: true}
		}
		// The step's own compare-and-set lost, another owner took the
		// lease it asked for first, or its author may not write the key:
		// the step failed.
		stepErr, status = err, StatusFailed
		rec.Status, rec.Error, res.Write, res.Goto = status, err.Error(), nil, ""
		if err := it.record(n, &rec, res, vc); err != nil {
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

// afterChildren ends a replayed run where its recording ended between the
// last child of a visit with children (a group, sequence, call or
// for_each: its items) and the visit's own record: the timeout or an
// interrupt came then (CutAfter: the visit is saved canceled), or the
// process was killed then (EndsAfter: the visit is not saved in this part).
// A for_each must be asked like a group: its items decide how it ends as
// a group's children do, and a recording cut there replayed as if it
// had not been (status failed, or a run that went on), or lost the
// resumed part's rerun of the step.
func (it *interp[C]) afterChildren(n *Node, visit int, stepErr error) error {
	r := it.r
	if r.Script == nil {
		return stepErr
	}
	if cause := r.Script.CutAfter(n.Label, visit); cause != nil {
		it.cut(cause)
	}
	if (stepErr == nil || !errors.Is(stepErr, ErrEnded)) && r.Script.EndsAfter(n.Label, visit) {
		return &RunError{Status: StatusInterrupted, Label: n.Label, Err: ErrEnded, Fatal: true}
	}
	return stepErr
}

func (it *interp[C]) record(n *Node, rec *board.StepRecord, res Result, vc *visitClock) error {
	if err := it.r.record(n, rec, res, vc); err != nil {
		return err
	}
	it.d.Recorded(n)
	return nil
}

// attempts runs a leaf step, retrying as its `retry` says.
func (it *interp[C]) attempts(c C, n *Node, visit int, rec *board.StepRecord, vc *visitClock) (Result, error) {
	r := it.r
	if r.Script != nil {
		if saved, ok := r.Script.Result(n.Label, visit); ok {
			return r.replayed(n, saved, rec)
		}
	}
	reruns := 0 // the driver's own re-runs of lost attempts, counted too
	for attempt := 1; ; attempt++ {
		rec.Attempts = attempt + reruns
		res, err := it.d.Leaf(c, Attempt{Node: n, Visit: visit, Attempt: attempt, r: r, vc: vc})
		reruns += max(res.Reruns, 0)
		rec.Attempts = attempt + reruns
		rec.Inputs, rec.Host = res.inputs, res.Host
		if err == nil && n.Until != nil {
			step := stateView(StatusSucceeded, res.Output, "", visit, 0, orZero(res.Fields, n))
			ok, uerr := r.evalOf(n).bool(n.Until, map[string]any{"step": step}, vc)
			switch {
			case uerr != nil:
				return res, fmt.Errorf("retry.until: %w", uerr)
			case !ok:
				err = fmt.Errorf("retry.until (%s) still false after %d attempts", n.Retry.Until.Src, attempt)
			}
		}
		if err == nil || n.Retry == nil || attempt > n.Retry.Max || it.stopped(c) != nil {
			return res, err
		}
		delay := r.backoff(n, attempt)
		rec.Delays = append(rec.Delays, delay.Milliseconds())
		log := r.logger(n.Label)
		log.Warn().Err(err).Int("visit", visit).Int("attempt", attempt).Int64("backoff_ms", delay.Milliseconds()).Msg("retrying")
		if err := it.d.Sleep(c, delay); err != nil {
			return res, err
		}
	}
}

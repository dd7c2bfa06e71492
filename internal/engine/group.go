package engine

import (
	"errors"
	"fmt"
	"sort"

	"github.com/planrunner/runner/internal/board"
)

// errSiblingFailed is the cause fail_fast cancels a group's children with.
var errSiblingFailed = errors.New("canceled: a sibling step failed (fail_fast)")

// group runs a parallel step's children concurrently, at most
// max_concurrency at a time, started in plan order. With fail_fast, the
// first failure cancels the siblings through their context, and those
// not started yet do not start.
func (it *interp[C]) group(c C, n *Node, visit int) (Result, error) {
	return it.r.groupResult(n, it.children(c, n, visit, n.Children))
}

// children runs kids, a group's children or a for_each step's items, and
// returns their errors in kids' order.
func (it *interp[C]) children(c C, n *Node, visit int, kids []*Node) []error {
	r := it.r
	if r.Script != nil {
		if order, ok := r.Script.Order(n.Label, visit); ok {
			return it.inOrder(c, n, kids, order)
		}
	}
	errs := make([]error, len(kids))
	if len(kids) == 0 {
		return errs
	}
	gc, cancel := it.d.WithCancel(c)
	defer cancel(nil)
	limit := n.MaxConcurrency
	if limit <= 0 || limit > len(kids) || (kids[0].item != nil && kids[0].item.gather != nil) {
		limit = len(kids) // gathered items wait on one answer together
	}
	if r.doneFailed(n) && n.FailFast {
		// A child failed in an earlier part of the run (continue.go): the
		// ones that had not started do not start, as in one part.
		cancel(errSiblingFailed)
	}
	g := n.dagOf(kids)
	var done []bool // with needs: which children have returned (read in Await's ready)
	if g != nil {
		done = make([]bool, len(kids))
	}
	it.d.Parallel(gc, len(kids), limit, func(cc C, k int, started bool) {
		i := k
		if g != nil {
			i = g.order[k]
			defer it.markDone(done, i)
		}
		ch := kids[i]
		// Checked first: a child that completed before the run was
		// resumed is done, not canceled by a sibling's new failure.
		if rec, ok := r.resumedDone(n, ch); ok {
			errs[i] = doneErr(ch, rec)
			return
		}
		if !started {
			errs[i] = it.notStarted(cc, ch, n.Label)
			return
		}
		if n.Each != nil {
			if err := it.gateItem(cc, ch); err != nil {
				errs[i] = err // not started: the next part starts it
				return
			}
		}
		if g != nil && len(g.needs[i]) > 0 {
			it.d.Await(cc, func() bool {
				for _, j := range g.needs[i] {
					if !it.isDone(done, j) {
						return false
					}
				}
				return true
			})
			if why := r.unmet(ch, kids, g.needs[i]); why != "" {
				errs[i] = it.skipForNeeds(cc, ch, n.Label, why)
				return
			}
		}
		if _, err := it.visit(cc, ch, n.Label); err != nil {
			errs[i] = err
			if n.FailFast && !isWaiting(err) && !errors.Is(err, ErrContinued) { // a question is not a failure, nor a pause: siblings go on
				cancel(errSiblingFailed)
			}
		}
	})
	return errs
}

// dagOf is n's dag when kids are its children (not a for_each's items).
func (n *Node) dagOf(kids []*Node) *dag {
	if n.dag == nil || len(kids) != len(n.Children) || n.Each != nil {
		return nil
	}
	return n.dag
}

// markDone and isDone keep which children of a dag returned; under the
// runner's wait lock, as local.Await reads them there (on Temporal the
// coroutines take turns and the lock is free).
func (it *interp[C]) markDone(done []bool, i int) {
	it.r.waitMu.Lock()
	done[i] = true
	it.r.waitMu.Unlock()
}

func (it *interp[C]) isDone(done []bool, i int) bool { return done[i] } // called with waitMu held (local) or in a coroutine (Temporal)

// resumedDone reports whether child ch of n completed before the run was
// resumed; an item's state is then taken from its record.
func (r *Runner) resumedDone(n, ch *Node) (board.StepRecord, bool) {
	rec, ok := r.alreadyDone(n.Label, ch.Label)
	if ok && ch.item != nil {
		ch.item.view = r.recordView(ch, rec)
	}
	return rec, ok
}

// inOrder runs kids one after another in the given order (children it
// does not name go last, in plan order). A child the recording shows
// canceled by a failed sibling's fail_fast is canceled again: run under a
// canceled context, or recorded as not started.
func (it *interp[C]) inOrder(c C, n *Node, kids []*Node, order []string) []error {
	r := it.r
	gc, cancel := it.d.WithCancel(c)
	defer cancel(nil)
	cancel(errSiblingFailed) // only the children the recording shows canceled see this one
	pos := make(map[string]int, len(order))
	for i, l := range order {
		pos[l] = i
	}
	index := make(map[*Node]int, len(kids)) // errors are kept in plan order, as children() keeps them
	for i, ch := range kids {
		index[ch] = i
	}
	sorted := append([]*Node(nil), kids...)
	sort.SliceStable(sorted, func(i, j int) bool {
		pi, oki := pos[sorted[i].Label]
		pj, okj := pos[sorted[j].Label]
		if oki != okj {
			return oki
		}
		return pi < pj
	})
	errs := make([]error, len(kids))
	for _, ch := range sorted {
		i := index[ch]
		if rec, ok := r.resumedDone(n, ch); ok {
			errs[i] = doneErr(ch, rec)
			continue
		}
		if stop := it.stopped(c); stop != nil {
			if _, _, ok := r.Script.Times(ch.Label, r.nextVisit(ch.Label)); !ok {
				errs[i] = stop // the run stopped before this child started, as it did when recorded
				continue
			}
		}
		cc := c
		switch r.Script.Canceled(ch.Label, r.nextVisit(ch.Label)) {
		case CanceledNotStarted:
			if errs[i] = it.notStarted(gc, ch, n.Label); fatal(errs[i]) {
				return errs
			}
			continue
		case CanceledRunning:
			cc = gc
		}
		if g := n.dagOf(kids); g != nil && len(g.needs[i]) > 0 {
			if why := r.unmet(ch, kids, g.needs[i]); why != "" {
				if errs[i] = it.skipForNeeds(c, ch, n.Label, why); fatal(errs[i]) {
					return errs
				}
				continue
			}
		}
		// After a fatal error the other children still come through
		// visit, which stops them as the live group's do (unrecorded).
		if _, err := it.visit(cc, ch, n.Label); err != nil {
			errs[i] = err
		}
	}
	return errs
}

// groupResult is a group's outcome from its children's errors.
func (r *Runner) groupResult(n *Node, errs []error) (Result, error) {
	outputs := map[string]any{}
	for _, c := range n.Children {
		outputs[c.localLabel()] = r.evalOf(c).get(c.localLabel())["output"]
	}
	res := Result{Output: outputs}
	if err := continued(errs); err != nil {
		return res, err
	}
	var failed []error
	var wait error
	for _, err := range errs {
		if isWaiting(err) {
			wait = err // every child that can finish does; then the run waits
			continue
		}
		if fatal(err) {
			return res, err
		}
		if err != nil && !errors.Is(err, errSiblingFailed) {
			failed = append(failed, err)
		}
	}
	switch {
	case len(failed) == 0 && wait != nil:
		return res, wait
	case len(failed) == 0:
		return res, nil
	case len(failed) == 1:
		return res, failed[0]
	}
	return res, fmt.Errorf("%d steps failed; first: %w", len(failed), failed[0])
}

// notStarted records a child that never ran because its group was
// canceled before its turn.
func (it *interp[C]) notStarted(c C, ch *Node, parent string) error {
	if err := it.recordUnrun(c, ch, parent, StatusCanceled, notStartedPrefix+errSiblingFailed.Error()); err != nil {
		return err
	}
	return errSiblingFailed
}

// recordUnrun records a child that did not run: its visit, at the time
// (the recorded one in a replay), with status and why.
func (it *interp[C]) recordUnrun(c C, ch *Node, parent, status, why string) error {
	if stop := it.stopped(c); stop != nil {
		return stop
	}
	r := it.r
	visit := r.nextVisitOf(ch.Label)
	now := it.d.Now(c)
	if r.Script != nil {
		if s, _, ok := r.Script.Times(ch.Label, visit); ok {
			now = s
		}
	}
	rec := board.StepRecord{Label: ch.Label, Visit: visit, Type: ch.Type, Parent: parent, Status: status,
		StartedAt: now, FinishedAt: now, Error: why}
	if err := it.record(ch, &rec, Result{}, nil); err != nil {
		return &RunError{Status: StatusFailed, Label: ch.Label, Err: err, Fatal: true}
	}
	return nil
}

// fatal reports whether err ends the whole run whatever continue_on_error
// says: an interrupt, the run's timeout, a limit, a board that cannot save.
func fatal(err error) bool {
	var re *RunError
	return errors.As(err, &re) && re.Fatal
}

// nextVisit is the visit number label's next visit gets.
func (r *Runner) nextVisit(label string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.visits.get(label) + 1
}

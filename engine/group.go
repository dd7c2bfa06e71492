package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/planrunner/runner/board"
)

// errSiblingFailed is the cause fail_fast cancels a group's children with.
var errSiblingFailed = errors.New("canceled: a sibling step failed (fail_fast)")

// group runs a parallel step's children concurrently, at most
// max_concurrency at a time. With fail_fast, the first failure cancels the
// siblings through their context, and those not started yet do not start.
func (r *Runner) group(ctx context.Context, n *Node, visit int) (Result, error) {
	if r.Script != nil {
		if order, ok := r.Script.Order(n.Label, visit); ok {
			return r.groupInOrder(ctx, n, order)
		}
	}
	gctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	limit := n.MaxConcurrency
	if limit <= 0 || limit > len(n.Children) {
		limit = len(n.Children)
	}
	sem := make(chan struct{}, limit)
	errs := make([]error, len(n.Children))
	var wg sync.WaitGroup
	for i, c := range n.Children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Checked first: a child that completed before the run was
			// resumed is done, not canceled by a sibling's new failure.
			if _, ok := r.alreadyDone(n.Label, c.Label); ok {
				return
			}
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-gctx.Done():
			}
			if gctx.Err() != nil {
				errs[i] = r.notStarted(gctx, c, n.Label)
				return
			}
			if _, err := r.visit(gctx, c, n.Label); err != nil {
				errs[i] = err
				if n.FailFast && !isWaiting(err) { // a question is not a failure: siblings go on
					cancel(errSiblingFailed)
				}
			}
		}()
	}
	wg.Wait()
	return r.groupResult(n, errs)
}

// groupInOrder runs a group's children one after another in the given
// order (children it does not name go last, in plan order). A child the
// recording shows canceled by a failed sibling's fail_fast is canceled
// again: run under a canceled context, or recorded as not started.
func (r *Runner) groupInOrder(ctx context.Context, n *Node, order []string) (Result, error) {
	gctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cancel(errSiblingFailed) // only the children the recording shows canceled see this one
	pos := map[string]int{}
	for i, l := range order {
		pos[l] = i
	}
	index := map[*Node]int{} // errors are kept in plan order, as group() keeps them
	for i, c := range n.Children {
		index[c] = i
	}
	kids := append([]*Node(nil), n.Children...)
	sort.SliceStable(kids, func(i, j int) bool {
		pi, oki := pos[kids[i].Label]
		pj, okj := pos[kids[j].Label]
		if oki != okj {
			return oki
		}
		return pi < pj
	})
	errs := make([]error, len(kids))
	for _, c := range kids {
		i := index[c]
		if _, ok := r.alreadyDone(n.Label, c.Label); ok {
			continue
		}
		if stop := r.stopped(ctx); stop != nil {
			if _, _, ok := r.Script.Times(c.Label, r.nextVisit(c.Label)); !ok {
				errs[i] = stop // the run stopped before this child started, as it did when recorded
				continue
			}
		}
		cctx := ctx
		switch r.Script.Canceled(c.Label, r.nextVisit(c.Label)) {
		case CanceledNotStarted:
			if errs[i] = r.notStarted(gctx, c, n.Label); fatal(errs[i]) {
				return r.groupResult(n, errs)
			}
			continue
		case CanceledRunning:
			cctx = gctx
		}
		// After a fatal error the other children still come through
		// visit, which stops them as the live group's do (unrecorded).
		if _, err := r.visit(cctx, c, n.Label); err != nil {
			errs[i] = err
		}
	}
	return r.groupResult(n, errs)
}

// groupResult is a group's outcome from its children's errors.
func (r *Runner) groupResult(n *Node, errs []error) (Result, error) {
	outputs := map[string]any{}
	for _, c := range n.Children {
		outputs[c.Label] = r.eval.get(c.Label)["output"]
	}
	res := Result{Output: outputs}
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
func (r *Runner) notStarted(ctx context.Context, c *Node, parent string) error {
	if stop := r.stopped(ctx); stop != nil {
		return stop
	}
	r.mu.Lock()
	r.visits[c.Label]++
	visit := r.visits[c.Label]
	r.mu.Unlock()
	now := time.Now().UTC()
	if r.Script != nil {
		if s, _, ok := r.Script.Times(c.Label, visit); ok {
			now = s
		}
	}
	rec := board.StepRecord{Label: c.Label, Visit: visit, Type: c.Type, Parent: parent, Status: StatusCanceled,
		StartedAt: now, FinishedAt: now, Error: notStartedPrefix + errSiblingFailed.Error()}
	if err := r.record(c, &rec, Result{}, nil); err != nil {
		return &RunError{Status: StatusFailed, Label: c.Label, Err: err, Fatal: true}
	}
	return errSiblingFailed
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
	return r.visits[label] + 1
}

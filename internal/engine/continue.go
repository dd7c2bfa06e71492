package engine

import (
	"errors"

	"github.com/planrunner/runner/internal/board"
)

// A run on Temporal must stay under Temporal's history limit (50k
// events). Between top-level steps the workflow continues as new
// (Driver.BeforeTop); a single for_each of thousands of items would pass
// the limit inside one step, so a driver may also stop a for_each between
// items (ItemGate): the items under way finish and are recorded, the ones
// not started yet are not, and every visit that holds them (the for_each,
// the groups, sequences and items around it) unwinds unrecorded and
// uncounted, as if it had not begun. The next part (Continuing) enters the
// same visits again, under the same numbers, and runs only the items and
// children with no record yet; what a recorded one did (failed, canceled
// by fail_fast) counts as it did.

// ErrContinued is what an ItemGate returns to stop a for_each between
// items: the run goes on in its next part.
var ErrContinued = errors.New("the run goes on in its next part")

// ItemGate is a Driver that may stop a for_each before it starts an item
// (by returning ErrContinued). Optional: the in-process driver is not one.
type ItemGate[C any] interface {
	BeforeItem(c C, item *Node) error
}

// gateItem asks the driver whether the next item of a for_each may start.
func (it *interp[C]) gateItem(c C, item *Node) error {
	if g, ok := it.d.(ItemGate[C]); ok {
		return g.BeforeItem(c, item)
	}
	return nil
}

// continued returns the ErrContinued among a block's children's errors:
// it wins over any failure, since the block's visit is not over.
func continued(errs []error) error {
	for _, err := range errs {
		if errors.Is(err, ErrContinued) {
			return err
		}
	}
	return nil
}

// unvisit takes back the count of a visit that unwound for the next part
// (visit numbers and limits.max_steps as if it had not begun).
func (r *Runner) unvisit(label string) {
	r.mu.Lock()
	r.visits.add(label, -1)
	r.mu.Unlock()
	r.total.Add(-1)
}

// doneErr is the error a child recorded before the part began returned
// then, so its block ends as it would have in one part: a failure is a
// failure (for fail_fast, and the block's own error), a sibling's
// fail_fast is that.
func doneErr(ch *Node, rec board.StepRecord) error {
	switch {
	case rec.Status == StatusFailed && !ch.ContinueOnError:
		return &RunError{Status: StatusFailed, Label: ch.Label, Err: errors.New(rec.Error)}
	case rec.Status == StatusCanceled:
		return errSiblingFailed
	}
	return nil
}

// doneFailed reports whether a child of block n recorded before this
// part failed (with fail_fast the rest of the block then does not start).
func (r *Runner) doneFailed(n *Node) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.done[n.Label] {
		if rec.Status == StatusFailed {
			return true
		}
	}
	return false
}

// Continuing prepares a runner whose board holds records (with Apply
// called for each, counts set) for a part that begins inside visits
// an earlier part left unrecorded (ErrContinued): the children they
// recorded are done, whatever their status, and the item list and clock
// readings of those visits go on from where they were.
func (r *Runner) Continuing(records []board.StepRecord) {
	r.init()
	pending := map[string]map[string]board.StepRecord{}
	for _, rec := range records {
		n := r.Prog.Node(rec.Label)
		if n == nil {
			continue
		}
		if n.isBlock() || n.Each != nil || n.Sub != nil {
			delete(pending, n.Label) // the block finished: its children are history
		}
		if rec.Parent != "" {
			if pending[rec.Parent] == nil {
				pending[rec.Parent] = map[string]board.StepRecord{}
			}
			pending[rec.Parent][rec.Label] = rec
		}
	}
	r.mu.Lock()
	r.done = pending
	r.mu.Unlock()
	for _, rec := range r.Board.Recordings() {
		k := visitKey{rec.Label, rec.Visit}
		switch rec.Kind {
		case KindClock:
			r.clockN[k] = max(r.clockN[k], rec.Call)
		case KindRead:
			r.readN[k] = max(r.readN[k], rec.Call)
		case KindWorkspace:
			r.wsN[k] = max(r.wsN[k], rec.Call)
		}
	}
}

package temporal

import (
	"github.com/planrunner/runner/internal/engine"
	"go.temporal.io/sdk/workflow"
)

// A big for_each on Temporal. Between top-level steps the run continues
// as new past --max-history-events (BeforeTop); a single for_each of
// thousands of command items would pass Temporal's 50k-event limit
// inside one step (about 6 events an item). So the workflow also
// continues as new between items (internal/engine/continue.go): once the history,
// with what the items under way will add, reaches the bound, no further
// item starts; those under way finish and are recorded; the visits around
// the for_each unwind unrecorded; and the next part, started from the
// board (in the store, not the history) and the same top-level step,
// enters the same visits again and runs only the items with no record.
// Each part holds at most about --max-history-events events, whatever the
// list's length; the board and records are those of a run in one part.
//
// Why not child workflows (a chunk of items each): a child would need its
// own interpreter over part of a visit, its board writes merged back into
// the parent's in the order one process makes them, and fail_fast,
// max_concurrency, cancel and resume carried across workflows. Continuing
// as new keeps one interpreter, the engine's own, which already resumes a
// visit from the records of its finished children (runner resume).

// itemsContinue versions the change: histories recorded before it ran a
// for_each in one part, whatever its length, and replay so.
const itemsContinue = "continue-as-new-between-items"

// eventsPerStep is what one step sent to a worker adds to the history:
// its activity's scheduled, started and completed events and its share of
// workflow tasks (measured: 6 for a command step, docs/benchmarks.md).
const eventsPerStep = 6

// BeforeItem stops a for_each before item starts when the history, with
// what the items under way will add, has reached the bound.
func (it *interp) BeforeItem(c wctx, item *engine.Node) error {
	if it.itemsCut {
		return engine.ErrContinued // the part ends: no item starts any more
	}
	info := workflow.GetInfo(c.ctx)
	cost := itemEvents(item)
	pending := 0
	for _, n := range it.inflight {
		pending += n
	}
	events := info.GetCurrentHistoryLength() + pending + cost
	if events < it.opt.MaxHistoryEvents && info.GetCurrentHistorySize() < it.opt.MaxHistoryBytes && !info.GetContinueAsNewSuggested() {
		it.start1(item, cost)
		return nil
	}
	if it.itemsStarted == 0 {
		// Every part runs at least one item, however small the bound.
		it.start1(item, cost)
		return nil
	}
	if workflow.GetVersion(c.ctx, itemsContinue, workflow.DefaultVersion, 1) < 1 {
		return nil // a run started before the change: one part, as recorded
	}
	it.itemsCut = true
	return engine.ErrContinued
}

// start1 notes an item under way and what it will add to the history
// (Visited takes it off).
func (it *interp) start1(item *engine.Node, cost int) {
	if it.inflight == nil {
		it.inflight = map[string]int{}
	}
	it.inflight[item.Label] = cost
	it.itemsStarted++
}

// itemEvents is about how many history events an item adds: none for a
// step that runs in the workflow (a board or branch step), eventsPerStep
// for each step that goes to a worker.
func itemEvents(n *engine.Node) int {
	if n.Children == nil && n.Seq == nil && n.Sub == nil {
		if engine.SchedOf(n.Kind) == engine.SchedPure {
			return 0
		}
		return eventsPerStep
	}
	sum := 0
	for _, ks := range [][]*engine.Node{n.Children, n.Seq} {
		for _, k := range ks {
			sum += itemEvents(k)
		}
	}
	if n.Sub != nil {
		for _, k := range n.Sub.Steps {
			sum += itemEvents(k)
		}
	}
	return sum
}

package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
)

// Gatherer is a step type's Step that asks, for a for_each visit, to
// gather its items: every item runs as usual, but what each hands to
// Gather.Join goes, with the others', to one function (a provider's
// batch API), whose answer for each item the item then takes.
type Gatherer interface {
	Gathers() bool
}

// Gather collects one value from each item of a for_each visit that runs
// now and hands them to one function once every item has joined or left.
// Its items all start at once (max_concurrency does not hold them back:
// they wait on one answer, not on each other).
type Gather struct {
	// Key names the gathering across a resume of the run: the run's id,
	// the step's label and visit, and the items that take part.
	Key string

	ctx     context.Context // the for_each visit's: ended, it ends the flush
	mu      sync.Mutex
	pending map[int]bool // items that have neither joined nor left
	joined  map[int]any
	flush   func(context.Context, map[int]any) (map[int]any, error)
	started bool
	done    chan struct{}
	out     map[int]any
	err     error
}

// ErrNotGathered is Join's answer to an item that cannot join: the
// gathering started without it; the item goes on alone.
var ErrNotGathered = fmt.Errorf("the item is not gathered")

// newGather is the gathering of items (indices) of visit of label.
func newGather(ctx context.Context, runID, label string, visit int, items []int) *Gather {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d", runID, label, visit)
	g := &Gather{ctx: ctx, pending: map[int]bool{}, joined: map[int]any{}, done: make(chan struct{})}
	for _, i := range items {
		h.Write([]byte("\x00" + strconv.Itoa(i)))
		g.pending[i] = true
	}
	g.Key = hex.EncodeToString(h.Sum(nil))[:32]
	return g
}

// Join hands item index's value v and waits for the gathering's answer
// for it. flush makes the answers of every joined item (the first
// joiner's flush is the one called, with the for_each visit's context).
// An item that cannot join gets ErrNotGathered.
func (g *Gather) Join(ctx context.Context, index int, v any, flush func(context.Context, map[int]any) (map[int]any, error)) (any, error) {
	g.mu.Lock()
	if g.started || !g.pending[index] {
		g.mu.Unlock()
		return nil, ErrNotGathered
	}
	delete(g.pending, index)
	g.joined[index] = v
	if g.flush == nil {
		g.flush = flush
	}
	g.startLocked()
	g.mu.Unlock()
	select {
	case <-g.done:
		if g.err != nil {
			return nil, g.err
		}
		return g.out[index], nil
	case <-ctx.Done():
		if g.ctx.Err() != nil {
			// The run is cancelled: the flush ends what it started (it
			// cancels a provider's batch), bounded, before the run ends.
			<-g.done
		}
		return nil, context.Cause(ctx)
	}
}

// Leave says item index will not join (it failed first, or its answer
// came from elsewhere: a recording). Leaving twice, or after joining,
// does nothing.
func (g *Gather) Leave(index int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pending[index] {
		delete(g.pending, index)
		g.startLocked()
	}
}

// startLocked runs the flush once no item is still to come.
func (g *Gather) startLocked() {
	if g.started || len(g.pending) > 0 || len(g.joined) == 0 {
		return
	}
	g.started = true
	joined, flush := g.joined, g.flush
	go func() {
		out, err := flush(g.ctx, joined)
		g.out, g.err = out, err
		close(g.done)
	}()
}

// Gather is the gathering the step visit's item takes part in, and the
// item's index; nil when it is not gathered (not an item, or its engine,
// Temporal, runs items apart).
func (sc *StepContext) Gather() (*Gather, int) {
	if sc.node == nil || sc.node.item == nil || sc.node.item.gather == nil {
		return nil, 0
	}
	return sc.node.item.gather, sc.node.item.index
}

// gatherOf is the gathering of a for_each visit's items, or nil when
// its step does not ask for one or the driver runs items elsewhere.
func (r *Runner) gatherOf(c any, n *Node, visit int, kids []*Node) (*Gather, func()) {
	ctx, ok := c.(context.Context)
	if !ok || n.isBlock() || len(kids) == 0 {
		return nil, func() {}
	}
	impl, err := n.impl()
	if err != nil {
		return nil, func() {}
	}
	if gs, ok := impl.(Gatherer); !ok || !gs.Gathers() {
		return nil, func() {}
	}
	var items []int
	r.mu.Lock()
	for i, k := range kids {
		if _, done := r.done[n.Label][k.Label]; !done {
			items = append(items, i)
		}
	}
	r.mu.Unlock()
	gctx, cancel := context.WithCancel(ctx)
	g := newGather(gctx, r.runID, n.Label, visit, items)
	for _, k := range kids {
		k.item.gather = g
	}
	return g, cancel
}

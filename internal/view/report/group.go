package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/planrunner/runner/internal/engine"
)

// Groups: a step whose visit ran other steps (a parallel group's
// children, a for_each step's items LABEL[i], a sub-plan call's steps
// CALL/LABEL) is shown as one collapsible section with a summary line,
// its children's rows inside it, each of which may be a group in turn.
// A run of 10,000 items is then one line until the reader opens it, and
// a link to an item still lands on it: Chromium opens the closed
// <details> around an element a fragment names.

// groupOpenMax is the most children a group shows open by default.
const groupOpenMax = 20

// groupView is a group step's summary: how many children it ran and how
// they ended.
type groupView struct {
	Kind   string // "item", "step" or "child": what its children are
	N      int
	Counts []kv // by status, in a fixed order
	Failed bool // some child failed (and the failure was not tolerated)
}

// Line is the summary as the page says it: "3 items: 2 succeeded, 1 failed".
func (g *groupView) Line() string {
	var b strings.Builder
	kind := g.Kind
	if g.N != 1 {
		kind = plural[kind]
	}
	fmt.Fprintf(&b, "%d %s", g.N, kind)
	for i, c := range g.Counts {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(c.V + " " + c.K)
	}
	return b.String()
}

// tree nests the step visits (in saved order: a group's record comes
// after its children's) under the visits that ran them, and gives the
// roots in saved order. A child whose group has no record yet (a live
// run's group still running, or a run stopped in it) stays at the top
// level, where it was saved.
func tree(steps []*stepView) []*stepView {
	type pending struct {
		at int
		s  *stepView
	}
	waiting := map[string][]pending{}
	var roots []pending
	for i, s := range steps {
		if kids := waiting[s.Rec.Label]; len(kids) > 0 {
			delete(waiting, s.Rec.Label)
			m := s.more()
			for _, k := range kids {
				m.kids = append(m.kids, k.s)
			}
			m.group = summarize(s)
		}
		if s.Rec.Parent == "" {
			roots = append(roots, pending{i, s})
			continue
		}
		waiting[s.Rec.Parent] = append(waiting[s.Rec.Parent], pending{i, s})
	}
	for _, kids := range waiting {
		roots = append(roots, kids...)
	}
	sort.Slice(roots, func(i, j int) bool { return roots[i].at < roots[j].at })
	out := make([]*stepView, len(roots))
	for i, r := range roots {
		out[i] = r.s
	}
	return out
}

// summarize orders a group's children (items in input order, others as
// they started), counts them, and sums their cost into the group's.
func summarize(s *stepView) *groupView {
	kids := s.x.kids
	g := &groupView{Kind: "child", N: len(kids)}
	items, calls, spawned := true, true, true
	for _, k := range kids {
		if !k.Rec.Spawned() {
			spawned = false
		}
		if _, _, ok := engine.SplitItemLabel(k.Rec.Label); !ok {
			items = false
		}
		if !strings.HasPrefix(k.Rec.Label, s.Rec.Label+"/") {
			calls = false // a callee's steps are CALL/LABEL
		}
	}
	switch {
	case spawned:
		g.Kind = "sub-agent"
		sort.SliceStable(kids, func(i, j int) bool { return kids[i].Rec.StartedAt().Before(kids[j].Rec.StartedAt()) })
	case items:
		g.Kind = "item"
		sort.SliceStable(kids, func(i, j int) bool { return itemIndex(kids[i]) < itemIndex(kids[j]) })
	case calls:
		g.Kind = "step"
		fallthrough
	default:
		sort.SliceStable(kids, func(i, j int) bool { return kids[i].Rec.StartedAt().Before(kids[j].Rec.StartedAt()) })
	}
	counts := map[string]int{}
	for _, k := range kids {
		st := k.Status
		if k.Tolerate {
			st = "failed (tolerated)"
		}
		counts[st]++
		if st == "failed" || (k.Group() != nil && k.Group().Failed && !k.Tolerate) {
			g.Failed = true
		}
		if k.HasCost && !k.Rec.Spawned() { // a sub-agent's cost is in its caller's already
			s.x.cost += k.Cost()
			s.HasCost = true
		}
	}
	for _, st := range []string{"succeeded", "failed", "failed (tolerated)", "canceled", "interrupted", "skipped"} {
		if n := counts[st]; n > 0 {
			g.Counts = append(g.Counts, kv{st, fmt.Sprint(n)})
			delete(counts, st)
		}
	}
	for _, st := range sortedKeys(counts) {
		g.Counts = append(g.Counts, kv{st, fmt.Sprint(counts[st])})
	}
	// What the items' rows show, the for_each step's result would repeat
	// whole (every item's state): its rows are the result.
	if items {
		s.itemRows = true
	}
	return g
}

var plural = map[string]string{"item": "items", "step": "steps", "child": "children", "sub-agent": "sub-agents"}

func itemIndex(s *stepView) int {
	_, i, _ := engine.SplitItemLabel(s.Rec.Label)
	return i
}

// openGroups opens the groups small enough to read at a glance; a large
// group stays one line (its summary says how its children ended).
func openGroups(steps []*stepView, long bool) {
	for _, s := range steps {
		if s.Group() == nil {
			continue
		}
		s.Open = !long && len(s.Kids()) <= groupOpenMax
		openGroups(s.Kids(), long)
	}
}

package engine

// visitCounts are the visits of each label so far: at the number of the
// label's node (Program.slotOf) for the plan's own labels, in a map for
// the others (a for_each item's, a callee's step under its call). A map
// of 100k labels took 3 MB of a run. Used under Runner.mu.
type visitCounts struct {
	prog  *Program
	slots []int
	more  map[string]int
}

func newVisitCounts(p *Program) *visitCounts {
	v := &visitCounts{prog: p, more: map[string]int{}}
	if p != nil && p.slots > 0 {
		v.slots = make([]int, p.slots)
	}
	return v
}

func (v *visitCounts) slotOf(label string) int {
	if v.slots == nil {
		return 0
	}
	return v.prog.slotOf(label)
}

// get is label's count.
func (v *visitCounts) get(label string) int {
	if i := v.slotOf(label); i > 0 {
		return v.slots[i]
	}
	return v.more[label]
}

// add adds d to label's count and returns the count.
func (v *visitCounts) add(label string, d int) int {
	if i := v.slotOf(label); i > 0 {
		v.slots[i] += d
		return v.slots[i]
	}
	v.more[label] += d
	return v.more[label]
}

// set sets label's count.
func (v *visitCounts) set(label string, n int) {
	if i := v.slotOf(label); i > 0 {
		v.slots[i] = n
		return
	}
	v.more[label] = n
}

// all are the counts by label: every label counted, none that was not.
func (v *visitCounts) all() map[string]int {
	out := make(map[string]int, len(v.more))
	for label, n := range v.more {
		out[label] = n
	}
	if v.slots != nil {
		for label, n := range v.prog.nodes {
			if c := v.slots[n.Step.Ord]; c != 0 {
				out[label] = c
			}
		}
	}
	return out
}

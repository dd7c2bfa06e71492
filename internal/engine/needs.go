package engine

import (
	"fmt"
)

// needs: a group whose children name siblings they wait for is a DAG.
// Its children start in an order where each comes after what it needs
// (plan order otherwise), each waits for its needs to finish, and runs
// when they all succeeded (or failed under their continue_on_error);
// otherwise it is recorded skipped, saying which need did not succeed.

// dag is a group's needs, by its children's positions.
type dag struct {
	needs [][]int // needs[i]: the children child i needs
	order []int   // the order children start in
}

// compileNeeds makes a group's dag; nil when no child needs another.
// The plan was checked (plans.checkNeeds): every need is a sibling and
// there is no cycle.
func compileNeeds(kids []*Node) *dag {
	index := map[string]int{}
	any := false
	for i, k := range kids {
		index[k.Label] = i
		any = any || len(k.Needs) > 0
	}
	if !any {
		return nil
	}
	g := &dag{needs: make([][]int, len(kids))}
	for i, k := range kids {
		for _, need := range k.Needs {
			if j, ok := index[need]; ok {
				g.needs[i] = append(g.needs[i], j)
			}
		}
	}
	placed := make([]bool, len(kids))
	for len(g.order) < len(kids) {
		progress := false
		for i := range kids {
			if placed[i] {
				continue
			}
			ready := true
			for _, j := range g.needs[i] {
				ready = ready && placed[j]
			}
			if ready {
				placed[i], progress = true, true
				g.order = append(g.order, i)
				break // the first ready child in plan order, then look again
			}
		}
		if !progress { // a cycle the plan check missed: plan order for the rest
			for i := range kids {
				if !placed[i] {
					placed[i] = true
					g.order = append(g.order, i)
				}
			}
		}
	}
	return g
}

// unmet is why child ch cannot run: the first of its needs that did not
// succeed (a failure tolerated by its continue_on_error counts as done);
// "" when they all did.
func (r *Runner) unmet(ch *Node, kids []*Node, needs []int) string {
	for _, j := range needs {
		need := kids[j]
		status, _ := r.evalOf(need).get(need.localLabel())["status"].(string)
		if status == StatusSucceeded || (status == StatusFailed && need.ContinueOnError) {
			continue
		}
		what := map[string]string{StatusFailed: "failed", StatusCanceled: "was canceled", StatusSkipped: "was skipped",
			StatusInterrupted: "was interrupted"}[status]
		if what == "" {
			what = "did not run"
		}
		return fmt.Sprintf("needs %s, which %s", need.Label, what)
	}
	return ""
}

// skipForNeeds records a child skipped because a need did not succeed.
func (it *interp[C]) skipForNeeds(c C, ch *Node, parent, reason string) error {
	return it.recordUnrun(c, ch, parent, StatusSkipped, "skipped: "+reason)
}

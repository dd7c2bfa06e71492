package engine

import (
	"errors"
	"fmt"
)

// Next says where the top level goes after step pc returned jump: the
// index of the next step (len(Steps) once the run is over), or the error
// that ends the run ("fail"). The in-process runner and the Temporal
// workflow both walk a plan with it, so they cannot drift apart.
func (p *Program) Next(pc int, jump string) (int, error) {
	switch jump {
	case "":
		return pc + 1, nil
	case "end":
		return len(p.Steps), nil
	case "fail":
		return 0, &RunError{Status: StatusFailed, Label: p.Steps[pc].Label, Err: errors.New("the branch chose fail")}
	}
	// A top-level step's Index is its place among the plan's steps: no
	// index of the labels is kept beside p.nodes (one entry a step).
	if n := p.nodes[jump]; n != nil && n.Parent == nil && n.Index < len(p.Steps) && p.Steps[n.Index] == n {
		return n.Index, nil
	}
	for i, n := range p.Steps { // not reached for a plan compiled whole
		if n.Label == jump {
			return i, nil
		}
	}
	// The plan was checked; this is a step type's bug.
	return 0, &RunError{Status: StatusFailed, Label: p.Steps[pc].Label, Err: fmt.Errorf("goto %q: no such top-level step", jump)}
}

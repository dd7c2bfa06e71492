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
	p.indexOnce.Do(func() {
		p.topIndex = make(map[string]int, len(p.Steps))
		for i, n := range p.Steps {
			p.topIndex[n.Label] = i
		}
	})
	i, ok := p.topIndex[jump]
	if !ok { // the plan was checked; this is a step type's bug
		return 0, &RunError{Status: StatusFailed, Label: p.Steps[pc].Label, Err: fmt.Errorf("goto %q: no such top-level step", jump)}
	}
	return i, nil
}

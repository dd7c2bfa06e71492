package plans

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// checkNeeds checks the needs of a group's children: each names another
// child of the same group, and they form no cycle (the cycle is named).
func checkNeeds(r *Reporter, kids []*Step) {
	index := map[string]int{}
	var labels []string
	for i, s := range kids {
		index[s.Label] = i
		labels = append(labels, s.Label)
	}
	ok := true
	for _, s := range kids {
		for j, need := range s.Needs {
			at := s.NeedsNode
			if at != nil && at.Kind == yaml.SequenceNode && j < len(at.Content) {
				at = at.Content[j]
			}
			switch _, known := index[need]; {
			case need == s.Label:
				r.At(at, "step %s needs itself", s.Label)
				ok = false
			case !known:
				r.At(at, "step %s needs %q, which is not a step of its group%s", s.Label, need, Suggest(need, labels))
				ok = false
			}
		}
	}
	if !ok {
		return
	}
	// A depth-first walk; a need met again while on the path closes a cycle.
	state := make([]int, len(kids)) // 0 new, 1 on the path, 2 done
	var path []int
	var visit func(i int) bool
	visit = func(i int) bool {
		state[i] = 1
		path = append(path, i)
		for _, need := range kids[i].Needs {
			j := index[need]
			switch state[j] {
			case 1:
				start := 0
				for k, p := range path {
					if p == j {
						start = k
					}
				}
				var names []string
				for _, p := range path[start:] {
					names = append(names, kids[p].Label)
				}
				names = append(names, kids[j].Label)
				r.At(kids[j].NeedsNode, "needs form a cycle: %s (each needs the next)", strings.Join(names, " → "))
				return false
			case 0:
				if !visit(j) {
					return false
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = 2
		return true
	}
	for i := range kids {
		if state[i] == 0 && !visit(i) {
			return
		}
	}
}

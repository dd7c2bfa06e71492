package plans

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// checkNeeds checks the needs of a group's children: each names another
// child of the same group, and they form no cycle (the cycle is named).
// Every problem is told: a cycle among the known needs is found beside an
// unknown one.
func checkNeeds(r *Reporter, kids []*Step) {
	index := map[string]int{}
	var labels []string
	for i, s := range kids {
		index[s.Label] = i
		labels = append(labels, s.Label)
	}
	for _, s := range kids {
		for j, need := range s.Needs {
			at := s.NeedsNode
			if at != nil && at.Kind == yaml.SequenceNode && j < len(at.Content) {
				at = at.Content[j]
			}
			switch _, known := index[need]; {
			case need == s.Label:
				r.At(at, "step %s needs itself", s.Label)
			case !known:
				r.At(at, "step %s needs %q, which is not a step of its group%s", s.Label, need, Suggest(need, labels))
			}
		}
	}
	// A depth-first walk; a need met again while on the path closes a
	// cycle. Needs reported above (unknown, itself) are left out.
	state := make([]int, len(kids)) // 0 new, 1 on the path, 2 done
	var path []int
	var visit func(i int)
	visit = func(i int) {
		state[i] = 1
		path = append(path, i)
		for _, need := range kids[i].Needs {
			j, known := index[need]
			if !known || j == i {
				continue
			}
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
			case 0:
				visit(j)
			}
		}
		path = path[:len(path)-1]
		state[i] = 2
	}
	for i := range kids {
		if state[i] == 0 {
			visit(i)
		}
	}
}

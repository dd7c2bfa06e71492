package plans

import (
	"fmt"
	"strings"
	"testing"
)

// TestKeysGivenTwiceAtAnySize: Fields finds a key given twice by looking
// through the pairs of a small mapping and with a map in a large one; a
// merge (<<) can take a small mapping past the bound. The problems are the
// same either way.
func TestKeysGivenTwiceAtAnySize(t *testing.T) {
	vars := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "  v%d: %d\n", i, i)
		}
		return b.String()
	}
	tests := []struct {
		name, src string
		want      []string
	}{
		{"small mapping", "version: 1\nvars:\n" + vars(3) + "  v1: again\nsteps: [{label: a, type: x}]\n",
			[]string{`p.yaml:6:3: vars: "v1" is given twice`}},
		{"large mapping", "version: 1\nvars:\n" + vars(40) + "  v1: again\n  v39: again\nsteps: [{label: a, type: x}]\n",
			[]string{`p.yaml:43:3: vars: "v1" is given twice`, `p.yaml:44:3: vars: "v39" is given twice`}},
		{"a step's own key", "version: 1\nsteps:\n  - {label: a, type: x, if: 'true', label: b}\n",
			[]string{`p.yaml:3:37: a step: "label" is given twice`}},
		{"merge past the bound, the mapping's own keys win", "version: 1\nd: &d\n" + vars(20) + "vars:\n  <<: *d\n  v1: mine\n  v2: mine\n  v2: twice\nsteps: [{label: a, type: x}]\n",
			[]string{`p.yaml:2:1: unknown field "d" in the plan`, `p.yaml:27:3: vars: "v2" is given twice`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tt.src))
			if err == nil {
				t.Fatal("no problem reported")
			}
			got := strings.Split(strings.TrimSpace(err.Error()), "\n")
			if len(got) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(got), len(tt.want), err)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %d: %q, want it to start %q", i, got[i], w)
				}
			}
		})
	}
	// The merged vars: the mapping's own v1 and v2, the rest from d.
	p, _ := Parse("p.yaml", []byte(tests[3].src))
	if v, _ := p.VarDefault("v1"); v != "mine" {
		t.Errorf("v1 = %v, want the mapping's own value", v)
	}
	if v, _ := p.VarDefault("v19"); v != 19 {
		t.Errorf("v19 = %v, want 19 from the merge", v)
	}
	if len(p.Vars) != 20 {
		t.Errorf("%d vars, want 20", len(p.Vars))
	}
}

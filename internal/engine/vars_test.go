package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/plans"
)

// A --var override keeps the kind its default was checked with: a list
// var stays a list and a mapping a mapping, so for_each over it, checked
// at load, cannot fail at the step.
func TestResolveVarsKeepsListsAndMappings(t *testing.T) {
	p, err := plans.Parse("plan.yaml", []byte("version: 1\nvars:\n  files: [a.go]\n  owners: {api: ann}\n  task: fix\nsteps:\n  - {label: a, type: command, run: 'true'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, value string
		want        string // the value, or the error's start
	}{
		{"files", `["x.go", "y.go"]`, "[x.go y.go]"},
		{"files", "[x.go]", "[x.go]"},
		{"files", "x.go", `--var files=x.go: want a list (YAML or JSON) like the default ["a.go"]`},
		{"files", `{"a": 1}`, `--var files={"a": 1}: want a list`},
		{"owners", `{"web": "bob"}`, "map[web:bob]"},
		{"owners", "[bob]", `--var owners=[bob]: want a mapping (YAML or JSON) like the default {"api":"ann"}`},
		{"task", "[not a list]", "[not a list]"}, // a string var takes any text
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			vars, err := ResolveVars(p, map[string]string{tc.name: tc.value})
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = fmt.Sprint(vars[tc.name])
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

package plans

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestMain fails the package when any test left plainStep, the StepMore
// every plain step shares, changed: a step must take its own (Own)
// before setting one of its fields, or the field shows on every step.
func TestMain(m *testing.M) {
	code := m.Run()
	if !reflect.DeepEqual(*plainStep, StepMore{FailFast: true}) {
		os.Stderr.WriteString("plainStep, shared by every plain step, was written to\n")
		code = 1
	}
	os.Exit(code)
}

// TestPlainStepsShareTheirRareFields: a step that is not a group, a
// sequence, a for_each or a plan call carries no fields of those; the
// ones that are carry their own.
func TestPlainStepsShareTheirRareFields(t *testing.T) {
	src := `version: 1
name: t
steps:
  - {label: a, type: command, run: "true"}
  - {label: b, type: command, run: "true", retry: {max: 2}, timeout: 1s}
  - label: g
    fail_fast: false
    parallel:
      - {label: c, type: command, run: "true"}
      - label: q
        steps:
          - {label: d, type: command, run: "true"}
      - {label: e, type: command, run: "true", needs: [c]}
  - {label: f, type: command, run: "echo ${{ item }}", for_each: "[1, 2]"}
`
	p, err := Parse("plan.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"a": false, "b": false, "c": false, "d": false, "g": true, "q": true, "e": true, "f": true}
	seen := 0
	for _, s := range p.AllSteps() {
		own, ok := want[s.Label]
		if !ok {
			continue
		}
		seen++
		if got := s.StepMore != plainStep; got != own {
			t.Errorf("step %s: has its own rare fields %v, want %v", s.Label, got, own)
		}
	}
	if seen != len(want) {
		t.Fatalf("saw %d of the %d steps", seen, len(want))
	}
	g, f, e := p.Lookup("g"), p.Lookup("f"), p.Lookup("e")
	if g.FailFast || len(g.Parallel) != 3 || f.ForEach == nil || f.MaxConcurrency != DefaultForEachConcurrency ||
		strings.Join(e.Needs, ",") != "c" || !p.Lookup("a").FailFast {
		t.Errorf("fields read wrong: g %+v, f %+v, e %+v", *g.StepMore, *f.StepMore, *e.StepMore)
	}
	// A copy changed leaves the step as it was.
	c := f.Copy()
	c.Own().ForEach = nil
	if f.ForEach == nil {
		t.Error("changing a copy's for_each changed the step's")
	}
	c = p.Lookup("a").Copy()
	c.Own().MaxConcurrency = 3
	if p.Lookup("a").MaxConcurrency != 0 {
		t.Error("changing a plain step's copy changed the step")
	}
}

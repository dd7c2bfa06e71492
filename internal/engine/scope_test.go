package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/plans"
)

// counted and sized are step types with result fields of their own.
type counted struct{}

func (counted) Name() string { return "counted" }
func (counted) Result() any {
	return struct {
		Count int    `json:"count"`
		Text  string `json:"text"`
	}{}
}
func (counted) Decode(*Decoder) Step { return nil }

type sized struct{}

func (sized) Name() string { return "sized" }
func (sized) Result() any {
	return struct {
		Size int `json:"size"`
	}{}
}
func (sized) Decode(*Decoder) Step { return nil }

// TestScopeDescribesTheStepsAnExpressionNames: an expression is checked
// against the steps it names, not a description of every step of the
// plan; it must get the type, or the error, it gets against all of
// them, for steps named, reached by a computed label, or used whole.
func TestScopeDescribesTheStepsAnExpressionNames(t *testing.T) {
	src := `version: 1
vars: {which: a}
steps:
  - {label: a, type: counted}
  - {label: many, type: counted, for_each: '[1, 2]'}
  - label: group
    parallel:
      - {label: inner, type: counted}
  - {label: b, type: sized}
`
	p, err := plans.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry()
	reg.Register(counted{})
	reg.Register(sized{})
	named := planScope(p, reg, nil)
	every := natureScope(named.whole())
	tests := []struct {
		src string
		ok  bool // checks as a value
	}{
		{"steps.a.count + 1", true},
		{"steps.a.text + vars.which", true},
		{"steps.a.output", true},
		{`steps["a"].ok`, true},
		{"steps.many.results[0].count", true},
		{"steps.many.counts.total > 1", true},
		{"steps.inner.ok && steps.b.size > 2", true},
		{"steps[vars.which].count", true},
		{"len(steps)", true},
		{"map([steps.a, steps.b], .ok)", true},
		{"steps.a.cuont", false},
		{"steps.nope.ok", false},
		{"steps.b.count", false},
		{"steps.a.count + steps.b.text", false},
	}
	for _, tc := range tests {
		for _, asBool := range []bool{false, true} {
			got, gotErr := compileNow(tc.src, named, asBool)
			want, wantErr := compileNow(tc.src, every, asBool)
			if !asBool && (gotErr == nil) != tc.ok {
				t.Errorf("%s: error %v, want ok %v", tc.src, gotErr, tc.ok)
			}
			switch {
			case (gotErr == nil) != (wantErr == nil):
				t.Errorf("%s (bool %v): %v; against every step: %v", tc.src, asBool, gotErr, wantErr)
			case gotErr != nil:
				if gotErr.Error() != wantErr.Error() {
					t.Errorf("%s (bool %v):\n%v\nagainst every step:\n%v", tc.src, asBool, gotErr, wantErr)
				}
			case got.typ != want.typ:
				t.Errorf("%s (bool %v): type %v, against every step %v", tc.src, asBool, got.typ, want.typ)
			}
		}
	}
}

// BenchmarkCheckNamedSteps compiles an expression naming one step of a
// 1,000-step plan, against the steps it names (as a plan's scope does)
// and against a description of every step.
func BenchmarkCheckNamedSteps(b *testing.B) {
	var src strings.Builder
	src.WriteString("version: 1\nvars: {n: 3}\nsteps:\n")
	for i := range 1000 {
		fmt.Fprintf(&src, "  - {label: s%d, type: counted}\n", i)
	}
	p, err := plans.Parse("p.yaml", []byte(src.String()))
	if err != nil {
		b.Fatal(err)
	}
	reg := NewRegistry()
	reg.Register(counted{})
	named := planScope(p, reg, nil)
	for _, c := range []struct {
		name  string
		scope *Scope
	}{{"named", named}, {"every", natureScope(named.whole())}} {
		b.Run(c.name, func(b *testing.B) {
			for i := range b.N {
				if _, err := compileNow(fmt.Sprintf("steps.s%d.ok && vars.n > %d", i%1000, i), c.scope, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

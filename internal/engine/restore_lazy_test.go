package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// A resumed run builds the state of a restored step (its saved result
// decoded) only when an expression names it; what the expressions see is
// what they saw before the run stopped, whether they name a step as
// steps.a, as steps["a"], or read steps whole.
func TestRestoredStepsBuiltWhenNamed(t *testing.T) {
	cases := []struct {
		name, field, want string
		left              int // restored steps not built after d ran
	}{
		{"steps.a", `text: "${{ steps.a.text }} ${{ steps.b.output }} ${{ steps.a.visits }}"`, "A B 1", 1},
		{`steps["c"]`, `text: "${{ steps[\"c\"].text }}"`, "C", 2},
		{"if", `text: "x", if: "steps.b.ok && steps.b.status == 'succeeded'"`, "x", 2},
		{"steps whole", `text: "${{ len(steps) }} ${{ steps.c.ok }}"`, "4 true", 0},
		{"a name the step does not know", `text: "${{ vars.n }}"`, "7", 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := func(d string) *engine.Program {
				src := fmt.Sprintf(`version: 1
vars: {n: 7}
steps:
  - {label: a, type: echo, text: A}
  - {label: b, type: echo, text: B}
  - {label: c, type: echo, text: C}
  - {label: d, type: echo, %s}
`, d)
				prog, err := engine.Compile("plan.yaml", []byte(src), registry())
				if err != nil {
					t.Fatal(err)
				}
				return prog
			}
			b := board.New(board.Run{ID: "test"})
			if err := (&engine.Runner{Prog: plan(`text: boom`), Board: b, Log: zerolog.Nop()}).Run(context.Background()); err == nil {
				t.Fatal("the first run succeeded")
			}
			r := &engine.Runner{Prog: plan(tc.field), Board: b, Log: zerolog.Nop()}
			if err := r.Restore(); err != nil {
				t.Fatal(err)
			}
			if n := engine.SavedViews(r); n != 3 {
				t.Errorf("after Restore %d steps' state built eagerly; want none of 3", 3-n)
			}
			if err := r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, res := lastResult(t, b, "d"); res["text"] != tc.want {
				t.Errorf("d saw %v; want %q", res["text"], tc.want)
			}
			if n := engine.SavedViews(r); n != tc.left {
				t.Errorf("%d restored steps left unbuilt; want %d", n, tc.left)
			}
		})
	}
}

package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// A plan with a mistake in an expression of a branch no run reaches:
// Compile (validate, a run's start) reports it wherever it stands;
// CompileChecked, for a plan Compile has passed before, leaves every
// expression to its first use, so a step that reaches a mistake (which
// only a change of the expression language could make) fails saying
// which expression and why, and the others run.
func TestCompileCheckedDefersExpressions(t *testing.T) {
	cases := []struct{ name, field, want string }{
		{"if", `text: b, if: "vars.n > "`, "vars.n >"},
		{"if of the wrong type", `text: b, if: "vars.n"`, "vars.n"},
		{"retry.until", `text: b, retry: {max: 2, until: "step.nope"}`, "step.nope"},
		{"template", `text: "b ${{ nope }}"`, "nope"},
		{"write.key", `text: b, write: {key: "k${{ nope }}"}`, "nope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := fmt.Sprintf(`version: 1
vars: {n: 1}
steps:
  - {label: a, type: echo, text: "a ${{ vars.n }}"}
  - {label: j, type: jump, when: "steps.a.ok", to: c}
  - {label: b, type: echo, %s}
  - {label: c, type: echo, text: "c ${{ steps.a.output }}"}
`, tc.field)
			if _, err := engine.Compile("plan.yaml", []byte(src), registry()); err == nil || !strings.Contains(err.Error(), "plan.yaml:6:") {
				t.Fatalf("Compile: %v; want the mistake on line 6", err)
			}
			prog, err := engine.CompileChecked("plan.yaml", []byte(src), registry())
			if err != nil {
				t.Fatalf("CompileChecked: %v", err)
			}
			b := board.New(board.Run{ID: "test"})
			if err := (&engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop()}).Run(context.Background()); err != nil {
				t.Fatalf("run around the mistake: %v", err)
			}
			if rec, res := lastResult(t, b, "c"); rec.Status != "succeeded" || res["text"] != "c a 1" {
				t.Errorf("c: %s %v", rec.Status, res)
			}
			// The step that reaches it fails, naming the expression.
			prog, _ = engine.CompileChecked("plan.yaml", []byte(strings.Replace(src, `when: "steps.a.ok"`, `when: "!steps.a.ok"`, 1)), registry())
			err = (&engine.Runner{Prog: prog, Board: board.New(board.Run{ID: "test"}), Log: zerolog.Nop()}).Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run through the mistake: %v; want an error naming %q", err, tc.want)
			}
		})
	}
}

// Parallel steps (and a for_each's items, which share their step's
// expressions) may be the first to use a deferred expression together:
// each is compiled once, and the scope's compiler configuration is
// built and used by one at a time (go test -race).
func TestDeferredExpressionsInParallelSteps(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nvars: {n: 2}\nsteps:\n  - label: g\n    parallel:\n")
	for i := range 16 {
		fmt.Fprintf(&b, "      - {label: p%d, type: echo, text: \"${{ vars.n * %d }}\", if: \"vars.n > 0\"}\n", i, i)
	}
	b.WriteString("  - {label: e, type: echo, for_each: \"1..16\", max_concurrency: 16, text: \"${{ item * vars.n }}\", retry: {max: 1, until: \"step.ok\"}}\n")
	prog, err := engine.CompileChecked("plan.yaml", []byte(b.String()), registry())
	if err != nil {
		t.Fatal(err)
	}
	bb := board.New(board.Run{ID: "test"})
	if err := (&engine.Runner{Prog: prog, Board: bb, Log: zerolog.Nop()}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 16 {
		if _, res := lastResult(t, bb, fmt.Sprintf("p%d", i)); res["text"] != fmt.Sprint(2*i) {
			t.Errorf("p%d: %v", i, res)
		}
		if _, res := lastResult(t, bb, fmt.Sprintf("e[%d]", i)); res["text"] != fmt.Sprint(2*(i+1)) {
			t.Errorf("e[%d]: %v", i, res)
		}
	}
}

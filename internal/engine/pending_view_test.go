package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// Steps not run yet read as pending however many other steps have run
// since: the steps that have not run share one pending view, and a step
// that runs gets its own, never a change to the shared one.
func TestPendingStepsStayPending(t *testing.T) {
	b, err := run(t, `version: 1
steps:
  - {label: a, type: echo, text: '${{ steps.b.status }} ${{ steps.c.status }} ${{ steps.d.visits }}'}
  - {label: b, type: echo, text: 'x'}
  - {label: c, type: echo, text: '${{ steps.a.status }} ${{ steps.b.status }} ${{ steps.c.status }} ${{ steps.d.status }} ${{ steps.d.ok }} ${{ steps.d.text }}'}
  - {label: d, type: echo, text: '${{ steps.c.output }}'}
`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"a": "pending pending 0",
		"c": "succeeded succeeded pending pending false ",
		"d": "succeeded succeeded pending pending false ",
	}
	for _, s := range b.Steps() {
		if w, ok := want[s.Label]; ok {
			_, res := lastResult(t, b, s.Label)
			if res["output"] != w {
				t.Errorf("step %s saw %q, want %q", s.Label, res["output"], w)
			}
		}
	}
}

// TestStartCostPerStep: what a runner sets up before the first step (the
// expressions' view of every step) allocates a few times per step, not a
// whole map per step: a 100k-step plan built 100k identical pending
// views at every start, resume and replay.
func TestStartCostPerStep(t *testing.T) {
	const budget = 3.0 // allocations per step; about 1 today, 10 before
	for _, n := range []int{300, 3000} {
		var src strings.Builder
		src.WriteString("version: 1\nsteps:\n")
		for i := range n {
			fmt.Fprintf(&src, "  - {label: s%d, type: echo, text: 'hi ${{ steps.s0.status }}'}\n", i)
		}
		prog, err := engine.Compile("plan.yaml", []byte(src.String()), registry())
		if err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(3, func() {
			r := &engine.Runner{Prog: prog, Board: board.New(board.Run{ID: "t"}), Log: zerolog.Nop(), Workdir: t.TempDir()}
			r.Prepare()
		})
		per := allocs / float64(n)
		t.Logf("%d steps: %.2f allocations per step", n, per)
		if per > budget {
			t.Errorf("%d steps: %.2f allocations per step before the first step runs, budget %.0f", n, per, budget)
		}
	}
}

package engine_test

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// steps.<label> reads the same whichever way an expression names the
// step: by name, by a string, by a name it computes, through `steps`
// as a whole (before and after which the finished steps' views are
// built differently), from inside a for_each block, and for a step not
// run yet.
func TestStepsViewsReadAlike(t *testing.T) {
	src := `
version: 1
vars: {which: a}
steps:
  - {label: a, type: echo, text: A}
  - {label: named, type: echo, text: "${{ steps.a.output }} ${{ steps.a.status }} ${{ steps.a.visits }} ${{ steps.a.ok }} ${{ steps.a.text }}"}
  - {label: quoted, type: echo, text: "${{ steps['a'].output }} ${{ steps.named.output }}"}
  - {label: computed, type: echo, text: "${{ steps[vars.which].output }} ${{ steps[vars.which].status }}"}
  - {label: pending, type: echo, text: "${{ steps.later.status }} ${{ steps.later.visits }} ${{ steps.later.output }}"}
  - {label: whole, type: echo, text: "${{ len(steps) }} ${{ steps.a.output }}"}
  - {label: after, type: echo, text: "${{ steps.whole.output }} ${{ steps.quoted.ok }} ${{ steps.later.status }}"}
  - label: group
    parallel:
      - label: block
        for_each: '[1, 2]'
        steps:
          - {label: inner, type: echo, text: "${{ item }} ${{ steps.a.output }} ${{ steps.after.output }}"}
          - {label: next, type: echo, text: "${{ steps.inner.output }}/${{ steps.a.status }}"}
  - {label: later, type: echo, text: "${{ steps.block.ok }} ${{ steps.pending.output }}"}
`
	for _, byLabel := range []bool{false, true} {
		t.Run(fmt.Sprintf("kept by label %v", byLabel), func(t *testing.T) { stepsViewsReadAlike(t, src, byLabel) })
	}
}

// stepsViewsReadAlike runs src, its steps' states kept by their number
// or by their label (engine.KeepByLabel), and checks what they read.
func stepsViewsReadAlike(t *testing.T, src string, byLabel bool) {
	_, b := runKept(t, src, byLabel)
	cases := []struct{ label, want string }{
		{"named", "A succeeded 1 true A"},
		{"quoted", "A A succeeded 1 true A"},
		{"computed", "A succeeded"},
		{"pending", "pending 0 "},
		{"whole", "12 A"},
		{"after", "12 A true pending"},
		{"block[0]/inner", "1 A 12 A true pending"},
		{"block[0]/next", "1 A 12 A true pending/succeeded"},
		{"block[1]/next", "2 A 12 A true pending/succeeded"},
		{"later", "true pending 0 "},
	}
	for _, tc := range cases {
		t.Run(tc.label, func(t *testing.T) {
			if _, res := lastResult(t, b, tc.label); res["text"] != tc.want {
				t.Errorf("text %q, want %q", res["text"], tc.want)
			}
		})
	}
}

// A step's visits count the same whether the run keeps them by the
// step's number or by its label: in a loop, in a for_each block, and in
// what a run continued elsewhere carries (Counts).
func TestVisitsCountAlike(t *testing.T) {
	src := `
version: 1
steps:
  - {label: tick, type: echo, text: "${{ steps.tick.visits }}"}
  - label: group
    parallel:
      - label: block
        for_each: '[1, 2, 3]'
        steps:
          - {label: inner, type: echo, text: "${{ item }} ${{ steps.tick.visits }}"}
  - {label: back, type: jump, when: 'steps.tick.visits < 3', to: tick}
  - {label: last, type: echo, text: "${{ steps.tick.visits }} ${{ steps.back.visits }} ${{ steps.block.visits }}"}
`
	var counts [2]map[string]int
	for i, byLabel := range []bool{false, true} {
		r, b := runKept(t, src, byLabel)
		if _, res := lastResult(t, b, "last"); res["text"] != "3 3 3" {
			t.Errorf("kept by label %v: last read %q, want %q", byLabel, res["text"], "3 3 3")
		}
		if rec, res := lastResult(t, b, "block[2]/inner"); res["text"] != "3 3" || rec.Visit != 3 {
			t.Errorf("kept by label %v: block[2]/inner visit %d read %q", byLabel, rec.Visit, res["text"])
		}
		counts[i], _ = r.Counts()
		// Carried into another runner, the counts go on from there.
		next := &engine.Runner{Prog: r.Prog, Board: board.New(board.Run{ID: "next"}), Log: zerolog.Nop()}
		next.SetCounts(counts[i], 0)
		if again, _ := next.Counts(); !maps.Equal(again, counts[i]) {
			t.Errorf("kept by label %v: counts carried %v, given %v", byLabel, again, counts[i])
		}
	}
	if !maps.Equal(counts[0], counts[1]) || counts[0]["tick"] != 3 || counts[0]["back"] != 3 {
		t.Errorf("counts by number %v, by label %v", counts[0], counts[1])
	}
}

// runKept runs src to its end, what the run keeps of each step kept by
// the step's number or by its label (engine.KeepByLabel).
func runKept(t *testing.T, src string, byLabel bool) (*engine.Runner, *board.Board) {
	t.Helper()
	prog, err := engine.Compile("plan.yaml", []byte(src), registry())
	if err != nil {
		t.Fatal(err)
	}
	if byLabel {
		engine.KeepByLabel(prog)
	}
	b := board.New(board.Run{ID: "test"})
	r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop()}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r, b
}

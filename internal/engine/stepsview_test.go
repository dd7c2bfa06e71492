package engine_test

import (
	"context"
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
	prog, err := engine.Compile("plan.yaml", []byte(src), registry())
	if err != nil {
		t.Fatal(err)
	}
	b := board.New(board.Run{ID: "test"})
	if err := (&engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop()}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
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

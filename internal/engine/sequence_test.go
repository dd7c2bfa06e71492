package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"github.com/rs/zerolog"
)

// A group's child may be a sequence: its steps run in order, each seeing
// the one before, a goto loops among them, and the group's other
// children run beside it.
func TestSequenceInGroup(t *testing.T) {
	b, err := runPlan(t, `
version: 1
steps:
  - label: group
    parallel:
      - label: seq
        steps:
          - {label: read, type: echo, text: "r${{ steps.read.visits }}"}
          - {label: again, type: jump, when: "steps.read.visits < 3", to: read}
          - {label: use, type: echo, text: "used ${{ steps.read.output }}"}
      - {label: other, type: echo, text: o}
  - {label: after, type: echo, text: "${{ steps.use.output }} ${{ steps.seq.status }}"}
`)
	if err != nil {
		t.Fatal(err)
	}
	if _, res := lastResult(t, b, "after"); res["output"] != "used r2 succeeded" {
		t.Errorf("after: %q", res["output"])
	}
	var path []string
	for _, s := range b.Steps() {
		if s.Parent == "seq" {
			path = append(path, s.Label)
		}
	}
	if got := strings.Join(path, " "); got != "read again read again read again use" {
		t.Errorf("the sequence ran %s", got)
	}
	// A failed step fails its sequence, and fail_fast the group.
	b, err = runPlan(t, `
version: 1
steps:
  - label: group
    parallel:
      - label: seq
        steps:
          - {label: bad, type: echo, text: boom}
          - {label: never, type: echo, text: x}
`)
	var re *engine.RunError
	if !errors.As(err, &re) || re.Label != "group" {
		t.Fatalf("run: %v", err)
	}
	for _, s := range b.Steps() {
		if s.Label == "never" {
			t.Errorf("the step after the failed one ran")
		}
	}
	if rec, _ := lastResult(t, b, "seq"); rec.Status != "failed" || !strings.Contains(rec.Error, "step bad: boom") {
		t.Errorf("seq: %s %q", rec.Status, rec.Error)
	}
}

// A sequence is refused where it makes no sense, with line:col, and a goto
// in a sequence reaches only its own steps.
func TestSequenceBadInput(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"  - {label: s, steps: [{label: a, type: echo, text: x}]}\n", "p.yaml:3:16: steps: (a sequence) is for a child of a parallel group"},
		{"  - {label: g, parallel: [{label: s, type: echo, steps: [{label: a, type: echo, text: x}]}]}\n", "a step has one of type, parallel or steps"},
		{"  - {label: g, parallel: [{label: s, retry: 2, steps: [{label: a, type: echo, text: x}]}]}\n", "retry applies to a step with a type, not to a sequence"},
		{"  - {label: g, parallel: [{label: s, max_concurrency: 2, steps: [{label: a, type: echo, text: x}]}]}\n", "p.yaml:3:55: max_concurrency applies to a sequence only with for_each"},
	} {
		_, err := engine.Compile("p.yaml", []byte("version: 1\nsteps:\n"+tc.src), registry())
		var list plans.Errors
		if !errors.As(err, &list) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.src, err, tc.want)
		}
	}
}

// A sequence cut short is resumed after its last completed step.
func TestSequenceResumes(t *testing.T) {
	src := `
version: 1
steps:
  - label: group
    parallel:
      - label: seq
        steps:
          - {label: a, type: echo, text: a}
          - {label: b, type: echo, text: "${{ vars.fail ? 'boom' : 'b' }}"}
      - {label: other, type: echo, text: o}
vars:
  fail: true
`
	prog, err := engine.Compile("plan.yaml", []byte(src), registry())
	if err != nil {
		t.Fatal(err)
	}
	b := board.New(board.Run{ID: "test"})
	if err := (&engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop()}).Run(context.Background()); err == nil {
		t.Fatal("the first run succeeded")
	}
	r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Vars: map[string]any{"fail": false}}
	if err := r.Restore(); err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, s := range b.Steps() {
		if s.Status == "succeeded" {
			count[s.Label]++
		}
	}
	if count["a"] != 1 || count["b"] != 1 || count["seq"] != 1 || count["other"] != 1 {
		t.Errorf("succeeded visits: %v", count)
	}
}

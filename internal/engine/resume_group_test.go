package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// A child that completed before a run was resumed stays done when the
// resumed group's other child fails again: it is not recorded as canceled
// under a new visit, and the group's output keeps its output.
func TestResumedGroupKeepsCompletedChild(t *testing.T) {
	src := `
version: 1
steps:
  - label: group
    max_concurrency: 1
    parallel:
      - {label: done, type: echo, text: kept}
      - {label: bad, type: echo, text: boom}
`
	prog, err := engine.Compile("plan.yaml", []byte(src), registry())
	if err != nil {
		t.Fatal(err)
	}
	b := board.New(board.Run{ID: "test"})
	// The first run: done succeeded, bad failed, the group failed.
	first := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Script: orderScript{[]string{"done", "bad"}}}
	if err := first.Run(context.Background()); err == nil {
		t.Fatal("the first run succeeded")
	}
	for i := 0; i < 20; i++ { // the live group: goroutines race for the one slot
		r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop()}
		if err := r.Restore(); err != nil {
			t.Fatal(err)
		}
		if err := r.Run(context.Background()); err == nil {
			t.Fatal("the resumed run succeeded")
		}
	}
	var visits []string
	for _, s := range b.Steps() {
		if s.Label == "done" {
			visits = append(visits, s.Status)
		}
	}
	if strings.Join(visits, " ") != "succeeded" {
		t.Errorf("done's records: %v, want one, succeeded", visits)
	}
	last := b.Steps()[len(b.Steps())-1]
	if last.Label != "group" || !strings.Contains(string(last.Result), `"done":"kept"`) {
		t.Errorf("the resumed group's result %s lost done's output", last.Result)
	}
}

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// A script agent answers a parallel fan-out's items in item order, whatever
// order they finish in: the example's items finish last first, and every
// run gives each item the same answer.
func TestScriptAgentFanOutAnswersByItem(t *testing.T) {
	plan := filepath.Join(repoRoot(), "examples/script-fanout/plan.yaml")
	want := map[string]string{
		"each[0]/review": "In api.go the handler ignores the request's context.",
		"each[1]/review": "In db.go the transaction is never rolled back on error.",
		"each[2]/review": "ui.go looks fine.",
		"verdict[0]":     "approve",
		"verdict[1]":     "block the merge",
		"verdict[2]":     "approve",
	}
	reversed := 0
	const runs = 20
	for i := range runs {
		r := runCLI(t, t.TempDir(), "run", plan, "-q")
		if r.code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i, r.code, r.stderr)
		}
		b, err := board.Load(blackboardPath(t, r.stdout))
		if err != nil {
			t.Fatal(err)
		}
		var finished []string
		for _, s := range b.Steps() {
			if strings.HasSuffix(s.Label, "/review") {
				finished = append(finished, s.Label)
			}
			w, ok := want[s.Label]
			if !ok {
				continue
			}
			var got string
			if err := json.Unmarshal(s.Result, &got); err != nil {
				var res struct{ Output string }
				json.Unmarshal(s.Result, &res)
				got = res.Output
			}
			if got != w {
				t.Errorf("run %d: %s answered %q, want %q", i, s.Label, got, w)
			}
		}
		if strings.Join(finished, " ") == "each[2]/review each[1]/review each[0]/review" {
			reversed++
		}
	}
	// The sleeps make the reverse order the usual one; a loaded machine
	// may reorder some runs, but not most of them.
	if reversed < runs/2 {
		t.Errorf("only %d of %d runs finished their items in reverse order: the test no longer tests what it says", reversed, runs)
	}
}

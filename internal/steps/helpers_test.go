package steps

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// runPlan compiles src with the built-in types and runs it in workdir on
// an in-memory board (run id "run1"), with retry backoffs skipped.
func runPlan(t *testing.T, workdir, src string, set *agents.Set, log zerolog.Logger) (*board.Board, error) {
	t.Helper()
	prog, err := engine.Compile("plan.yaml", []byte(src), Registry())
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	b := board.New(board.Run{ID: "run1"})
	r := &engine.Runner{Prog: prog, Board: b, Log: log, Workdir: workdir, Agents: set,
		Sleep: func(context.Context, time.Duration) error { return nil }}
	return b, r.Run(context.Background())
}

// saved returns the saved result of the last visit of label, with its
// status and error.
func saved(t *testing.T, b *board.Board, label string) (map[string]any, string, string) {
	t.Helper()
	for i := len(b.Steps()) - 1; i >= 0; i-- {
		s := b.Steps()[i]
		if s.Label != label {
			continue
		}
		var out map[string]any
		if err := json.Unmarshal(s.Result, &out); err != nil {
			t.Fatal(err)
		}
		return out, s.Status, s.Error
	}
	t.Fatalf("step %s did not run", label)
	return nil, "", ""
}

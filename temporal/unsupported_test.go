package temporal

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/runs"
)

// A plan asking what a run on Temporal cannot do is refused before any
// workflow starts, saying what and how to run it instead (no client is
// even needed to find out).
func TestRunPlanRefusesWhatTemporalCannotDo(t *testing.T) {
	for _, c := range []struct{ example, want string }{
		{"approve-tool", "approve:"},
		{"swarm", "agent root: spawns: (sub-agents its llm steps start with tools: [spawn]) is not supported on Temporal"},
	} {
		t.Run(c.example, func(t *testing.T) {
			r, err := runs.New(runs.Options{Plan: filepath.Join("..", "examples", c.example, "plan.yaml"), Workdir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			_, err = RunPlan(context.Background(), nil, nil, r, RunOptions{})
			if !runs.IsUsage(err) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "without --engine temporal") {
				t.Fatalf("err = %v, want a usage error saying %q and what to do", err, c.want)
			}
		})
	}
}

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
	r, err := runs.New(runs.Options{Plan: filepath.Join("..", "examples", "approve-tool", "plan.yaml"), Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = RunPlan(context.Background(), nil, nil, r, RunOptions{})
	if !runs.IsUsage(err) || !strings.Contains(err.Error(), "approve:") || !strings.Contains(err.Error(), "without --engine temporal") {
		t.Fatalf("err = %v, want a usage error naming approve: and what to do", err)
	}
}

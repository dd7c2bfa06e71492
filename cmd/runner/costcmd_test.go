package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/budget"
	"github.com/planrunner/runner/internal/runs"
)

// savedCostRun saves a finished run of plan name under dir, started at
// start, with one model call per cost.
func savedCostRun(t *testing.T, dir, name string, start time.Time, costs ...float64) {
	t.Helper()
	id := board.NewID(start)
	path := filepath.Join(runs.RunsDir(dir), id, "blackboard.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := board.Create(path, board.Run{ID: id, PlanPath: filepath.Join(dir, name+".yaml"), Status: board.StatusRunning, StartedAt: start}, board.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range costs {
		resp := fmt.Sprintf(`{"model":"m","text":"ok","usage":{"input_tokens":10,"output_tokens":2},"cost_usd":%g,"priced":true}`, c)
		if err := b.AddRecording(board.Recording{Label: "s", Visit: 1, Call: i + 1, Kind: "llm", Agent: "bot", Response: []byte(resp)}); err != nil {
			t.Fatal(err)
		}
	}
	end := start.Add(time.Minute)
	if err := b.UpdateRun(func(r *board.Run) { r.Status, r.FinishedAt = board.StatusSucceeded, &end }); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// runner cost counts the saved runs started since --since, whether the
// run index is yet to be built (the first listing) or says which runs
// started too early to be read.
func TestCostSinceWithRunIndex(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UTC()
	savedCostRun(t, dir, "old", now.AddDate(0, 0, -40), 1)
	savedCostRun(t, dir, "mid", now.AddDate(0, 0, -2), 0.125, 0.125)
	savedCostRun(t, dir, "new", now.Add(-time.Hour), 0.5)
	ledger := budget.Open(filepath.Join(dir, "ledger"))
	cases := []struct {
		since       time.Time
		runs, calls int
		usd         float64
		plans       int
	}{
		{now.AddDate(0, 0, -100), 3, 4, 1.75, 3},
		{now.AddDate(0, 0, -10), 2, 3, 0.75, 2},
		{now.Add(-2 * time.Hour), 1, 1, 0.5, 1},
		{now, 0, 0, 0, 0},
	}
	for pass := range 2 { // no index yet, then the index
		for _, c := range cases {
			rep, err := spending(dir, ledger, c.since, now)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Runs != c.runs || rep.Total.Calls != c.calls || rep.Total.CostUSD != c.usd || len(rep.ByPlan) != c.plans {
				t.Errorf("pass %d, since %s: %d runs, %d calls, $%g, %d plans; want %d, %d, $%g, %d",
					pass, c.since.Format(time.DateOnly), rep.Runs, rep.Total.Calls, rep.Total.CostUSD, len(rep.ByPlan), c.runs, c.calls, c.usd, c.plans)
			}
		}
		if _, err := os.Stat(runs.IndexPath(dir)); err != nil {
			t.Fatalf("pass %d: no run index: %v", pass, err)
		}
	}
}

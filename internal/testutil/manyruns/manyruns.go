// Package manyruns saves many small finished runs under a directory, as
// `runner run` would leave them, for the run list's benchmarks and the
// figures of docs/benchmarks.md (internal/runs/testdata/genruns.go). It
// may import the standard library and internal/board only.
package manyruns

import (
	"bytes"
	"os"
	"path/filepath"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// Write saves n runs of one plan (dir/plan.yaml, written too) under
// dir/.runner/runs: two steps each, one run in ten failed, started a
// second apart and ending before now. Two runs saved by package board are
// the templates; each run is a copy with its own id and times, written
// without the fsyncs a real run makes, so 100,000 take a minute, not an
// hour.
func Write(dir string, n int) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	plan := filepath.Join(dir, "plan.yaml")
	src := "version: 1\nname: many\nsteps:\n  - {label: a, type: command, run: 'true'}\n  - {label: b, type: command, run: 'true'}\n"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(plan, []byte(src), 0o644); err != nil {
		return err
	}
	// Two runs saved by package board (one succeeded, one failed) are the
	// templates; each run is a copy with its own id and times, written
	// without the fsyncs a real run makes.
	tmp, err := os.MkdirTemp(dir, ".templates")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	base := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	var tmpl [2][2][]byte // [failed?][blackboard.json, journal]
	for k, status := range []string{board.StatusSucceeded, board.StatusFailed} {
		id := board.NewID(base)
		path := filepath.Join(tmp, id, "blackboard.json")
		os.MkdirAll(filepath.Dir(path), board.DirMode)
		b, err := board.Create(path, board.Run{ID: id, PlanPath: plan, PlanSource: src, Workdir: dir,
			Status: board.StatusRunning, StartedAt: base}, board.Options{})
		if err != nil {
			return err
		}
		for j, label := range []string{"a", "b"} {
			st := board.StatusSucceeded
			if j == 1 {
				st = status
			}
			at := base.Add(time.Duration(j+1) * time.Second)
			if err := b.AddStep(board.StepRecord{Label: label, Visit: 1, Type: "command", Status: st, StartedAt: at,
				FinishedAt: at.Add(5 * time.Millisecond), DurationMS: 5, Result: []byte(`{"exit_code":0}`)}); err != nil {
				return err
			}
		}
		end := base.Add(3 * time.Second)
		if err := b.UpdateRun(func(r *board.Run) { r.Status, r.FinishedAt = status, &end }); err != nil {
			return err
		}
		b.Close()
		for f, name := range []string{path, board.JournalPath(path)} {
			data, err := os.ReadFile(name)
			if err != nil {
				return err
			}
			tmpl[k][f] = bytes.ReplaceAll(data, []byte(id), []byte("@ID@"))
		}
	}
	stamp := func(t time.Time) []byte { return []byte(t.Format("2006-01-02T15:04:05")) }
	start := time.Now().Add(-time.Duration(n) * time.Second).UTC().Truncate(time.Second)
	for i := range n {
		t := start.Add(time.Duration(i) * time.Second)
		id := board.NewID(t)
		rdir := filepath.Join(dir, ".runner", "runs", id)
		if err := os.MkdirAll(rdir, board.DirMode); err != nil {
			return err
		}
		k := 0
		if i%10 == 9 {
			k = 1
		}
		for f, name := range []string{"blackboard.json", "blackboard.json.journal"} {
			data := bytes.ReplaceAll(tmpl[k][f], []byte("@ID@"), []byte(id))
			for s := range 4 {
				data = bytes.ReplaceAll(data, stamp(base.Add(time.Duration(s)*time.Second)), stamp(t.Add(time.Duration(s)*time.Second)))
			}
			if err := os.WriteFile(filepath.Join(rdir, name), data, board.FileMode); err != nil {
				return err
			}
		}
	}

	return nil
}

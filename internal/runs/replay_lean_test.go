//go:build linux

package runs_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/runs"
	"github.com/rs/zerolog"
)

// A recording large enough that its replay reads its step records back
// from the file as it reaches them replays as recorded, offline; a plan
// changed near its end diverges at that step, and one with a step more
// at that step, after every visit before it.
func TestReplayReadsALargeRecordingFromItsFile(t *testing.T) {
	const n = 3000
	saved, dir := failedRun(t, n)
	if len(saved) < 1<<20 {
		t.Fatalf("the recording is %d bytes: its records would be held, not read back", len(saved))
	}
	path := filepath.Join(dir, "bb.json")
	os.Remove(filepath.Join(dir, "marker")) // offline: the command's result comes from the recording anyway
	rep, err := runs.Replay(context.Background(), path, runs.ReplayOptions{Options: replay.Options{Out: filepath.Join(dir, "replay.json"), Log: zerolog.Nop()}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Matched() {
		t.Fatalf("the replay diverged: %s", rep.Divergence)
	}
	if rep.RunErr == nil || !strings.Contains(rep.RunErr.Error(), "exit status 1") {
		t.Errorf("the replay ended with %v, not the recorded failure", rep.RunErr)
	}
	rec, err := board.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rep.Board.NumSteps(), rec.NumSteps(); got != want || want != n {
		t.Errorf("the replay has %d step records, the recording %d, want %d", got, want, n)
	}
	rep.Board.Close()

	plan := strings.Replace(failingAtTheEnd(n), "value: 'hi ${{ vars.who }} 2883'", "value: 'bye ${{ vars.who }} 2883'", 1)
	changed := filepath.Join(dir, "changed.yaml")
	if err := os.WriteFile(changed, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = runs.Replay(context.Background(), path, runs.ReplayOptions{PlanFile: changed, Options: replay.Options{Out: filepath.Join(dir, "replay2.json"), Log: zerolog.Nop()}})
	if err != nil {
		t.Fatal(err)
	}
	rep.Board.Close()
	d := rep.Divergence
	if d == nil {
		t.Fatal("a changed value replayed as recorded")
	}
	if d.Label != "s2883" || d.Visit != 1 || len(d.Path) != 2884 || d.Path[0] != "s0#1" || !strings.Contains(d.Diff, "bye me 2883") {
		t.Errorf("diverged at %s#%d after %d visits (first %v): %s\n%s", d.Label, d.Visit, len(d.Path), d.Path[:1], d.Message, d.Diff)
	}

	plan = strings.Replace(failingAtTheEnd(n), "  - {label: s2002,", "  - {label: extra, type: board, op: read, key: 'k0'}\n  - {label: s2002,", 1)
	if err := os.WriteFile(changed, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = runs.Replay(context.Background(), path, runs.ReplayOptions{PlanFile: changed, Options: replay.Options{Out: filepath.Join(dir, "replay3.json"), Log: zerolog.Nop()}})
	if err != nil {
		t.Fatal(err)
	}
	rep.Board.Close()
	if d = rep.Divergence; d == nil || d.Kind != replay.KindPath || d.Label != "extra" || len(d.Path) != 2003 ||
		d.Path[2001] != "s2001#1" || d.Path[2002] != "extra#1" {
		t.Fatalf("a step more: %+v", d)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// runFile writes a run's file as `runner run` leaves it: the plan's
// source (plan steps written out), step records with inputs, recordings,
// and keys written, rewritten, deleted, expiring, handed off, in
// conflict, and one large enough to be stored as a blob. The plan gives
// agent analyst the key patterns task:* and cache:* to read.
func runFile(t *testing.T, path string, planSteps, records int) time.Time {
	t.Helper()
	var src strings.Builder
	src.WriteString("version: 1\nname: p\nagents:\n  analyst: {provider: script, responses: [ok], board: {read: [\"task:*\", \"cache:*\"]}}\nsteps:\n")
	for i := 0; i < planSteps; i++ {
		fmt.Fprintf(&src, "  - {label: s%d, type: board, op: write, key: 'k%d', value: 'v ${{ vars.who }} %d'}\n", i, i, i)
	}
	now := time.Date(2026, 2, 4, 10, 0, 0, 0, time.UTC)
	b, err := board.Create(path, board.Run{ID: "r1", PlanPath: "plan.yaml", PlanSource: src.String(), Status: "failed"}, board.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.SetClock(func() time.Time { now = now.Add(time.Second); return now })
	for i := 0; i < records; i++ {
		s := board.StepRecord{Label: fmt.Sprintf("s%d", i), Visit: 1, Type: "board", Status: "succeeded", StartedAt: now, FinishedAt: now,
			Result: json.RawMessage(`{"output":"v me"}`), Inputs: map[string]string{"key": fmt.Sprintf("k%d", i), "value": "v me"}}
		if err := b.AddStep(s); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			if err := b.AddRecording(board.Recording{Label: s.Label, Visit: 1, Kind: "clock", Response: json.RawMessage(`"2026-02-04T10:00:00Z"`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, op := range []board.WriteOp{
		{Key: "task:q4", Value: map[string]any{"status": "pending"}, Author: "orchestrator"},
		{Key: "task:q4", Value: map[string]any{"status": "mine"}, Author: "analyst"}, // a conflict
		{Key: "task:q4", Value: "taken over", Author: "lead", Handoff: true},
		{Key: "cache:sum", Value: 1300000.5, Author: "analyst", Topic: "sums"},
		{Key: "note", Value: "expires", TTL: 30 * time.Second, Author: "cli"},
		{Key: "gone", Value: "deleted", Author: "cli"},
		{Key: "gone", Delete: true, Author: "cli"},
		{Key: "big", Value: strings.Repeat("a large value ", board.BlobMin/8), Author: "runner"},
		{Key: "quote", Value: "line\n\"quoted\" é", Author: "runner"},
	} {
		op.ExpectVersion = -1
		if _, err := b.Write(op); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	return now
}

// boardOut is what `runner board path args...` prints, and its exit code.
func boardOut(t *testing.T, now time.Time, path string, args ...string) string {
	t.Helper()
	var so, se bytes.Buffer
	code := runBoard(append([]string{path}, args...), strings.NewReader(""), &so, &se, func() time.Time { return now })
	return fmt.Sprintf("exit %d\n%s%s", code, so.String(), se.String())
}

// TestBoardReadsOfRunFile: get, list and snapshot on a run's file print
// what they print when the whole file is read (the same file indented
// otherwise, which is read whole), byte for byte, before and after a TTL
// runs out; an agent's key patterns still apply.
func TestBoardReadsOfRunFile(t *testing.T) {
	dir := t.TempDir()
	path, whole := filepath.Join(dir, "bb.json"), filepath.Join(dir, "whole.json")
	end := runFile(t, path, 20, 50)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, data, "", "\t"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(whole, ind.Bytes(), board.FileMode); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string // in the output, besides being the whole read's
	}{
		{[]string{"get", "task:q4"}, "taken over"},
		{[]string{"get", "task:q4", "--json"}, `"handoff"`},
		{[]string{"get", "cache:sum", "--agent", "analyst"}, "1300000.5"},
		{[]string{"get", "quote", "--agent", "analyst"}, "may not read"},
		{[]string{"get", "quote"}, `"quoted" é`},
		{[]string{"get", "gone"}, "null"},
		{[]string{"get", "note"}, "expires"},
		{[]string{"get", "big"}, "a large value a large"},
		{[]string{"list"}, "KEY"},
		{[]string{"list", "task:"}, "task:q4"},
		{[]string{"list", "--json"}, `"topic":"sums"`},
		{[]string{"list", "--agent", "analyst"}, "cache:sum"},
		{[]string{"snapshot"}, `"version": 3`},
		{[]string{"read", "note"}, "expires"},
	}
	for _, tt := range tests {
		for _, at := range []time.Duration{0, time.Minute} {
			now := end.Add(at)
			got, want := boardOut(t, now, path, tt.args...), boardOut(t, now, whole, tt.args...)
			if got != want {
				t.Errorf("%v at +%s: got\n%s\nwant (the whole file read)\n%s", tt.args, at, got, want)
			}
			if at == 0 && !strings.Contains(got, tt.want) {
				t.Errorf("%v: %q is not in\n%s", tt.args, tt.want, got)
			}
		}
	}
}

// TestBoardGetCostsNoStepRecordsNorPlan: `runner board FILE get KEY` on a
// run's file does not build its step records nor parse its plan (issue
// 22: on the 100k-step run's 75 MB file it peaked at 6.5 times the
// file). A file with more step records, or a larger plan, costs a few
// bytes more per record read past, and not more than the plan's own
// bytes twice; building a step record and its inputs cost about a
// thousand bytes, parsing a plan step more than its text.
func TestBoardGetCostsNoStepRecordsNorPlan(t *testing.T) {
	tests := []struct {
		name            string
		planSteps, recs [2]int
		units           func(path string, recs int) float64 // step records, or bytes of plan source
		most            float64
	}{
		{"step record", [2]int{10, 10}, [2]int{200, 2200}, func(_ string, recs int) float64 { return float64(recs) }, 64},
		{"byte of plan source", [2]int{100, 2100}, [2]int{10, 10}, func(path string, _ int) float64 { return planBytes(path) }, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var alloc, units [2]float64
			for i := range 2 {
				path := filepath.Join(dir, fmt.Sprintf("bb%d.json", i))
				end := runFile(t, path, tt.planSteps[i], tt.recs[i])
				units[i] = tt.units(path, tt.recs[i])
				alloc[i] = float64(getAlloc(t, end, path))
			}
			per := (alloc[1] - alloc[0]) / (units[1] - units[0])
			t.Logf("%.0f and %.0f bytes allocated: %.2f per %s", alloc[0], alloc[1], per, tt.name)
			if per > tt.most {
				t.Errorf("get allocates %.1f bytes per %s, want at most %.0f", per, tt.name, tt.most)
			}
		})
	}
}

// planBytes is the size of the plan source saved in the run's file.
func planBytes(path string) float64 {
	b, err := board.LoadForRead(path)
	if err != nil {
		return 0
	}
	return float64(len(b.Run().PlanSource))
}

// getAlloc is the least of three reads' bytes allocated by `get task:q4`.
func getAlloc(t *testing.T, now time.Time, path string) uint64 {
	var least uint64
	for i := 0; i < 3; i++ {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		out := boardOut(t, now, path, "get", "task:q4")
		runtime.ReadMemStats(&after)
		if !strings.Contains(out, "taken over") {
			t.Fatalf("get: %s", out)
		}
		if n := after.TotalAlloc - before.TotalAlloc; i == 0 || n < least {
			least = n
		}
	}
	return least
}

package board

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// liveRun writes a run's file as runner leaves it: a plan source, step
// records with inputs, recordings, and keys written, rewritten, deleted,
// expiring, handed off, in conflict, a large value stored as a blob and
// a masked secret. steps: how many step records.
func liveRun(t testing.TB, path string, steps int) time.Time {
	t.Helper()
	t0 := time.Date(2026, 2, 4, 10, 0, 0, 0, time.UTC)
	now := t0
	clock := func() time.Time { now = now.Add(time.Second); return now }
	b, err := Create(path, Run{ID: "r1", PlanPath: "plan.yaml", PlanSource: "version: 1\nname: p\nagents:\n  a: {board: {read: ['pub:*']}}\n# \"quoted\" \\ and é\n",
		Status: "failed"}, Options{Redact: func(s string) string { return strings.ReplaceAll(s, "hunter2", "***") }})
	if err != nil {
		t.Fatal(err)
	}
	b.SetClock(clock)
	w := func(op WriteOp) {
		t.Helper()
		op.ExpectVersion = -1
		if _, err := b.Write(op); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < steps; i++ {
		s := StepRecord{Label: "s" + string(rune('a'+i%26)), Visit: i/26 + 1, Type: "board", Status: "succeeded",
			StartedAt: now, FinishedAt: now, Result: json.RawMessage(`{"output":"x"}`), Inputs: map[string]string{"key": "k", "value": "a longer input value, as steps render them"}}
		if err := b.AddStep(s); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			if err := b.AddRecording(Recording{Label: s.Label, Visit: s.Visit, Kind: "clock", Response: json.RawMessage(`"2026-02-04T10:00:00Z"`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	w(WriteOp{Key: "pub:plain", Value: "v1", Author: "runner"})
	w(WriteOp{Key: "pub:plain", Value: map[string]any{"n": 2.5, "list": []any{"x", nil, true}}, Author: "runner", Topic: "news"})
	w(WriteOp{Key: "gone", Value: "soon deleted", Author: "runner"})
	w(WriteOp{Key: "gone", Delete: true, Author: "runner"})
	w(WriteOp{Key: "short", Value: "expires", TTL: 30 * time.Second, Author: "cli"})
	w(WriteOp{Key: "long", Value: "stays", TTL: time.Hour, Author: "cli"})
	w(WriteOp{Key: "secret", Value: "the password is hunter2", Author: "runner"})
	w(WriteOp{Key: "big", Value: strings.Repeat("large value ", BlobMin/8), Author: "runner"})
	w(WriteOp{Key: "task:x", Value: "mine", Author: "alice"})
	w(WriteOp{Key: "task:x", Value: "yours", Author: "bob"}) // a conflict: bob never read alice's
	w(WriteOp{Key: "task:x", Value: "taken over", Author: "carol", Handoff: true})
	w(WriteOp{Key: "esc\u00e9", Value: "line\nbreak \"quoted\"", Author: "runner"})
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	return now
}

// TestLoadLiveAsLoad: what a read of live keys gives from LoadLive (get,
// list, snapshot) is what it gives from the whole board Load reads, on a
// run's file as runner writes it, one with a journal, and one laid out
// otherwise (the last two read whole, as before).
func TestLoadLiveAsLoad(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, path string) // after the run saved its file
		keys   bool                            // read for its keys only (else whole, as before)
	}{
		{"as saved", func(*testing.T, string) {}, true},
		{"a journal to fold in", func(t *testing.T, path string) {
			b, err := OpenAppend(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Write(WriteOp{Key: "pub:plain", Value: "from the CLI", Author: "cli", ExpectVersion: -1}); err != nil {
				t.Fatal(err)
			}
			b.Close()
		}, false},
		{"indented otherwise", func(t *testing.T, path string) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := json.Indent(&out, data, "", "\t"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, out.Bytes(), FileMode); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bb.json")
			end := liveRun(t, path, 40)
			tt.change(t, path)
			full, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			live, err := LoadLive(path)
			if err != nil {
				t.Fatal(err)
			}
			if keys := live.Len() < full.Len(); keys != tt.keys {
				t.Errorf("read for its keys only: %v, want %v (%d entries of %d)", keys, tt.keys, live.Len(), full.Len())
			}
			if got, want := live.Run(), full.Run(); !jsonEqual(t, got, want) {
				t.Errorf("run: got %+v, want %+v", got, want)
			}
			// Before and after the 30 s TTL ran out.
			for _, now := range []time.Time{end, end.Add(time.Minute)} {
				clock := func() time.Time { return now }
				for _, prefix := range []string{"", "task:", "pub", "none"} {
					if got, want := live.KeysAt(prefix, clock), full.KeysAt(prefix, clock); !jsonEqual(t, got, want) {
						t.Errorf("keys %q at %s: got %+v, want %+v", prefix, now, got, want)
					}
				}
				for _, k := range []string{"pub:plain", "gone", "short", "long", "secret", "big", "task:x", "esc\u00e9", "never"} {
					got, gok := live.GetAt(k, clock)
					want, wok := full.GetAt(k, clock)
					if gok != wok || !jsonEqual(t, got, want) {
						t.Errorf("get %s at %s: got %v %+v, want %v %+v", k, now, gok, got, wok, want)
					}
				}
			}
			if e, ok := live.Get("secret"); !ok || e.Content != "the password is ***" {
				t.Errorf("the secret: %v %+v, want it masked as saved", ok, e)
			}
			if _, err := live.Write(WriteOp{Key: "x", Value: 1}); err == nil {
				t.Error("a write on a board read for its keys was taken")
			}
		})
	}
}

// TestLoadLiveSkipsStepRecords: reading a run's file for its keys costs
// what its entries cost, not its step records: a run ten times as long
// in steps, with the same keys, allocates a few bytes more per step (its
// lines are read past), where building each step record and its inputs
// cost hundreds (get on the 100k-step run's 75 MB file peaked at 6.5
// times the file that way).
func TestLoadLiveSkipsStepRecords(t *testing.T) {
	dir := t.TempDir()
	alloc := func(steps int) uint64 {
		path := filepath.Join(dir, "bb"+strings.Repeat("x", steps%7)+".json")
		liveRun(t, path, steps)
		var least uint64
		for i := 0; i < 3; i++ { // the least of three: a collection mid-read allocates too
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b, err := LoadLive(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := b.Get("pub:plain"); !ok {
				t.Fatal("pub:plain is not there")
			}
			runtime.ReadMemStats(&after)
			if n := after.TotalAlloc - before.TotalAlloc; i == 0 || n < least {
				least = n
			}
		}
		return least
	}
	const few, many = 200, 2200
	small, large := alloc(few), alloc(many)
	perStep := (float64(large) - float64(small)) / (many - few)
	t.Logf("%d steps: %d bytes; %d steps: %d bytes; %.0f bytes per step record", few, small, many, large, perStep)
	if perStep > 64 {
		t.Errorf("reading the keys of a run's file allocates %.0f bytes per step record, want at most 64: its step records are being built", perStep)
	}
}

func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}

// TestLoadLivePlanSource: the plan source LoadLive leaves out of what it
// keeps is read back whole by Run, also one longer than a piece of the
// file read at once (the cut then spans pieces), with escapes.
func TestLoadLivePlanSource(t *testing.T) {
	for _, size := range []int{0, 1, 100, 300 << 10, 1 << 20} {
		src := strings.Repeat("x: \"q\" \\ é\n\t", size/12+1)[:size]
		path := filepath.Join(t.TempDir(), "bb.json")
		b, err := Create(path, Run{ID: "r", PlanSource: src, Status: "ok"}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Write(WriteOp{Key: "k", Value: "v", ExpectVersion: -1}); err != nil {
			t.Fatal(err)
		}
		if err := b.Save(); err != nil {
			t.Fatal(err)
		}
		b.Close()
		live, err := LoadLive(path)
		if err != nil {
			t.Fatal(err)
		}
		full, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		src = full.Run().PlanSource // as saved: a cut é is saved as U+FFFD
		if got := live.Run(); got.PlanSource != src || got.ID != "r" || got.Status != "ok" {
			t.Errorf("%d bytes of plan: got %d bytes back (%q...), id %q, status %q", size, len(got.PlanSource), got.PlanSource[:min(20, len(got.PlanSource))], got.ID, got.Status)
		}
		if e, ok := live.Get("k"); !ok || e.Content != "v" {
			t.Errorf("%d bytes of plan: k is %v %+v", size, ok, e)
		}
	}
}

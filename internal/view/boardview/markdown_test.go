package boardview

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func write(t *testing.T, b *board.Board, op board.WriteOp) {
	t.Helper()
	op.ExpectVersion = -1
	if _, err := b.Write(op); err != nil {
		t.Fatal(err)
	}
}

// TestMarkdown renders boards as the document people read (runner board
// show, the MCP server, board.markdown) and compares it with
// testdata/NAME.md.
func TestMarkdown(t *testing.T) {
	for _, tc := range []struct {
		name string
		fill func(t *testing.T, b *board.Board)
	}{
		{"empty", func(t *testing.T, b *board.Board) {}},
		{"failed", func(t *testing.T, b *board.Board) {
			b.UpdateRun(func(r *board.Run) {
				r.Status = board.StatusFailed
				r.Error = "step build: exit 2\nmake: *** [all] Error 2"
				end := t0.Add(time.Minute)
				r.FinishedAt = &end
			})
			b.AddStep(board.StepRecord{Label: "build", Visit: 1, Status: "failed", StartedAt: t0, DurationMS: 1500,
				Result: json.RawMessage(`{"output":"ignored"}`), Error: "exit 2\nmake: *** [all] Error 2"})
		}},
		{"swarm", func(t *testing.T, b *board.Board) {
			write(t, b, board.WriteOp{Key: "task:parse", Author: "boss",
				Value: map[string]any{"assigned_to": "parser", "status": "in_progress", "description": "parse the | logs"}})
			write(t, b, board.WriteOp{Key: "task:plain", Author: "boss", Value: "a task given as text"})
			write(t, b, board.WriteOp{Key: "signal:parser", Author: "parser", Value: "up", TTL: time.Minute})
			write(t, b, board.WriteOp{Key: "signal:coder", Author: "coder",
				Value: map[string]any{"agent_id": "coder-1", "status": "busy", "current_task": "parse", "last_heartbeat": "2026-03-01T08:59:00Z"}})
			write(t, b, board.WriteOp{Key: "findings", Author: "parser", Value: map[string]any{"errors": 3, "files": []any{"a.log", "b.log"}}})
			write(t, b, board.WriteOp{Key: "gone", Author: "parser", Value: 1})
			write(t, b, board.WriteOp{Key: "gone", Author: "parser", Delete: true})
			write(t, b, board.WriteOp{Key: "trace:parse", Author: "parser", Value: "read 2 files"})
			// Two authors, neither having read the other's value: a conflict.
			write(t, b, board.WriteOp{Key: "answer", Author: "alice", Value: "42"})
			write(t, b, board.WriteOp{Key: "answer", Author: "bob", Value: "forty-two"})
			long := strings.Repeat("word ", 40)
			b.AddStep(board.StepRecord{Label: "plan", Visit: 1, Status: "succeeded", StartedAt: t0, DurationMS: 12,
				Result: json.RawMessage(`{"output":"` + long + `"}`)})
			b.AddStep(board.StepRecord{Label: "count", Visit: 2, Status: "succeeded", StartedAt: t0, DurationMS: 3,
				Result: json.RawMessage(`{"output":{"n":1}}`)})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := board.New(board.Run{ID: "run-1", Status: board.StatusRunning, PlanPath: "plans/swarm.yaml", StartedAt: t0})
			b.SetClock(func() time.Time { return t0 })
			tc.fill(t, b)
			// Read later than the writes: a signal's expiry is counted from now.
			b.SetClock(func() time.Time { return t0.Add(20 * time.Second) })
			var buf bytes.Buffer
			if err := Markdown(&buf, b); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.name+".md")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != string(want) {
				t.Errorf("%s differs (go test -update rewrites it):\n%s", golden, got)
			}
		})
	}
}

// KeepMarkdown rewrites the file after a change, and at stop with what
// was written just before it.
func TestKeepMarkdown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "swarm-blackboard.md")
	b := board.New(board.Run{ID: "run-1", Status: board.StatusRunning, StartedAt: t0})
	stop := KeepMarkdown(b, path, 10*time.Millisecond)
	write(t, b, board.WriteOp{Key: "task:first", Author: "boss", Value: "one"})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		data, _ := os.ReadFile(path)
		if bytes.Contains(data, []byte("| first | boss |")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never showed task:first:\n%s", path, data)
		}
	}
	write(t, b, board.WriteOp{Key: "task:last", Author: "boss", Value: "two"})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(data, []byte("| last | boss |")) {
		t.Fatalf("after stop: %v\n%s", err, data)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != board.FileMode {
		t.Errorf("mode %v %v, want %v", fi.Mode(), err, board.FileMode)
	}
}

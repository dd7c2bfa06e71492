package replay_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/steps"
	"github.com/rs/zerolog"
)

// liveHeap is the heap in use after collections (two: encoding/json keeps
// its last buffer in a sync.Pool, emptied by the second).
func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// TestLargeAnswerWithEscapesHeldOnce runs a plan whose model answers 8 MiB
// of text with escapes (quotes, newlines, <, &: its JSON is 1.6 times the
// text), then replays the saved run offline, and counts what each leaves
// live per byte of the answer (the goal is a peak within 3 times the
// largest value, docs/benchmarks.md). Before, the run's board kept the text, the step
// result's JSON and the recording's JSON (4.2 bytes per byte), and the
// replay's board the replayed text, its result's JSON and the recording's
// (2.6 more, the loaded recording's besides). Now the board holds the
// text once, both JSON documents keep its key, and the replay's board
// shares the recorded board's text. The replay still matches, and the
// file still holds the answer's text as given.
func TestLargeAnswerWithEscapesHeldOnce(t *testing.T) {
	var sb strings.Builder
	for sb.Len() < 8<<20 {
		sb.WriteString("a line of text, \"quoted\" <b> & more\n")
	}
	text := sb.String()
	wd := t.TempDir()
	answers, _ := json.Marshal(map[string][]string{"ask": {text}})
	if err := os.WriteFile(filepath.Join(wd, "answers.json"), answers, 0o644); err != nil {
		t.Fatal(err)
	}
	answers = nil
	const src = "version: 1\nname: big\nagents:\n  bot: {provider: script, responses: answers.json}\nsteps:\n  - {label: ask, type: llm, agent: bot, prompt: say a lot}\n"
	path := filepath.Join(wd, "plan.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(wd, "blackboard.json")
	n := float64(len(text))
	text = "" // the run's own copy is the only one

	before := liveHeap()
	var b *board.Board
	func() {
		prog, err := engine.Compile(path, []byte(src), steps.Registry())
		if err != nil {
			t.Fatal(err)
		}
		if b, err = board.Create(out, board.Run{ID: "big", PlanPath: path, PlanSource: src, PlanSHA256: prog.Plan.SHA256, Workdir: wd, Status: board.StatusRunning}, board.Options{}); err != nil {
			t.Fatal(err)
		}
		if err := (&engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: wd}).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}()
	run := float64(liveHeap()-before) / n
	t.Logf("the run's board: %.2f bytes live per byte of the answer", run)
	if run > 1.5 {
		t.Errorf("after the run, %.2f bytes live per byte of the answer: want at most 1.5 (the text once, no JSON copies of it)", run)
	}
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b = nil

	rec, err := board.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	before = liveHeap()
	var rep *replay.Report
	func() {
		var err error
		if rep, err = replay.Run(context.Background(), rec, replay.Options{Log: zerolog.Nop()}); err != nil {
			t.Fatal(err)
		}
	}()
	grew := float64(liveHeap()-before) / n
	t.Logf("the replay's board: %.2f bytes live per byte of the answer", grew)
	if !rep.Matched() {
		t.Fatalf("the replay diverged: %+v", rep.Divergence)
	}
	if grew > 0.5 {
		t.Errorf("the replay's board keeps %.2f bytes per byte of the answer the recording holds already: want at most 0.5 (shared, no JSON copies)", grew)
	}
	got := rep.Board.Recordings()[0]
	var resp struct{ Text string }
	if err := json.Unmarshal(got.Response, &resp); err != nil || len(resp.Text) != int(n) {
		t.Errorf("the replay's recording does not hold the answer: %d bytes, err %v", len(resp.Text), err)
	}
	runtime.KeepAlive(rec)
}

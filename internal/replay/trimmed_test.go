package replay_test

import (
	"bytes"
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

// TestTrimmedAnswerStoredAndLoadedOnce: a run whose model answers 8 MiB
// of text with escapes ending in a newline (any model's answer) saves the
// answer's text once, though the llm step's output is the answer trimmed
// (a second value before: the file held both, 2.9 times the text, and
// loading it decoded both, 2 bytes live per byte of the answer); the
// loaded run holds the text once, and its offline replay matches and
// saves a file that reads back, byte for byte, as the recorded run.
func TestTrimmedAnswerStoredAndLoadedOnce(t *testing.T) {
	var sb strings.Builder
	for sb.Len() < 8<<20 {
		sb.WriteString("a line of text, \"quoted\" <b> & more\n")
	}
	text := sb.String()
	lit, _ := json.Marshal(text)
	n, litLen := float64(len(text)), len(lit)
	lit = nil
	wd := t.TempDir()
	answers, _ := json.Marshal(map[string][]string{"ask": {text}})
	if err := os.WriteFile(filepath.Join(wd, "answers.json"), answers, 0o644); err != nil {
		t.Fatal(err)
	}
	answers, text = nil, ""
	const src = "version: 1\nname: big\nagents:\n  bot: {provider: script, responses: answers.json}\nsteps:\n  - {label: ask, type: llm, agent: bot, prompt: say a lot}\n"
	path := filepath.Join(wd, "plan.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(wd, "blackboard.json")
	func() {
		prog, err := engine.Compile(path, []byte(src), steps.Registry())
		if err != nil {
			t.Fatal(err)
		}
		b, err := board.Create(out, board.Run{ID: "big", PlanPath: path, PlanSource: src, PlanSHA256: prog.Plan.SHA256, Workdir: wd, Status: board.StatusRunning}, board.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := (&engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: wd}).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := b.Save(); err != nil {
			t.Fatal(err)
		}
		b.Close()
	}()
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("blackboard.json: %.2f bytes per byte of the answer's JSON", float64(fi.Size())/float64(litLen))
	if fi.Size() > int64(litLen)*12/10 {
		t.Errorf("blackboard.json is %d bytes for an answer of %d as JSON: want it once", fi.Size(), litLen)
	}

	before := liveHeap()
	rec, err := board.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	loaded := float64(liveHeap()-before) / n
	t.Logf("the loaded run: %.2f bytes live per byte of the answer", loaded)
	if loaded > 1.4 {
		t.Errorf("the loaded run keeps %.2f bytes per byte of the answer: want at most 1.4 (its text once, the output a slice of it)", loaded)
	}

	replayed := filepath.Join(wd, "replay.json")
	rep, err := replay.Run(context.Background(), rec, replay.Options{Log: zerolog.Nop(), Out: replayed})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Matched() {
		t.Fatalf("the replay diverged: %+v", rep.Divergence)
	}
	rep.Board.Close()
	fi, err = os.Stat(replayed)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > int64(litLen)*12/10 {
		t.Errorf("the replay's blackboard.json is %d bytes for an answer of %d as JSON: want it once", fi.Size(), litLen)
	}
	again, err := board.Load(replayed)
	if err != nil {
		t.Fatal(err)
	}
	s0, _ := rec.LastStep()
	s1, _ := again.LastStep()
	r0, _ := rec.LastRecording()
	r1, _ := again.LastRecording()
	if !bytes.Equal(s0.Result, s1.Result) || !bytes.Equal(r0.Response, r1.Response) {
		t.Error("the replay's saved step result or recording does not read back as the recorded run's, byte for byte")
	}
	var res struct{ Output string }
	if err := json.Unmarshal(s1.Result, &res); err != nil || float64(len(res.Output)) != n-1 || strings.HasSuffix(res.Output, "\n") {
		t.Errorf("the replayed output is %d bytes (err %v): want the answer trimmed, %d", len(res.Output), err, int(n)-1)
	}
	runtime.KeepAlive(rec)
}

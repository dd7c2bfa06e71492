package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// memoryPlan loops an agent with memory: conversation; its command step
// kills runner (SIGKILL) after the second visit, once (the file killed
// marks it).
const memoryPlan = `version: 1
agents:
  coder:
    provider: script
    memory: conversation
    responses: ["done 1", "done 2", "done 3", "summed"]
steps:
  - {label: work, type: llm, agent: coder, prompt: "Try ${{ steps.work.visits + 1 }}"}
  - {label: crash, type: command, run: "if [ ${{ steps.work.visits }} = 2 ] && [ ! -e killed ]; then touch killed; kill -9 $PPID; sleep 5; fi; echo ok"}
  - label: again
    type: branch
    cases:
      - {when: steps.work.visits < 3, goto: work}
  - {label: sum, type: llm, agent: coder, prompt: "Sum up"}
`

// The memory is derived from the recorded calls, not held in the process:
// a run killed with SIGKILL between two visits of a memory agent and
// resumed sends, on every later visit, the same messages as a run that
// was never killed; its offline replay matches.
func TestMemoryResumeAfterKill(t *testing.T) {
	requests := func(b *board.Board) []string {
		var out []string
		for _, r := range b.Recordings() {
			if r.Kind == "llm" {
				out = append(out, r.Label+": "+string(r.Request))
			}
		}
		return out
	}
	run := func(kill bool) (string, *board.Board) {
		wd := t.TempDir()
		if err := os.WriteFile(filepath.Join(wd, "plan.yaml"), []byte(memoryPlan), 0o644); err != nil {
			t.Fatal(err)
		}
		if !kill {
			if err := os.WriteFile(filepath.Join(wd, "killed"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out := filepath.Join(wd, "bb.json")
		r := runCLI(t, wd, "run", "plan.yaml", "--out", out, "-q")
		if kill {
			if r.code != 137 && r.code != -1 {
				t.Fatalf("the run was not killed: exit %d: %s", r.code, r.stderr)
			}
			if killed, err := board.Load(out); err != nil || killed.Run().Status != "running" {
				t.Fatalf("killed board: %v", err)
			}
			if r := runCLI(t, wd, "resume", out, "-q"); r.code != 0 {
				t.Fatalf("resume exit %d: %s", r.code, r.stderr)
			}
		} else if r.code != 0 {
			t.Fatalf("run exit %d: %s", r.code, r.stderr)
		}
		b, err := board.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		if b.Run().Status != "succeeded" {
			t.Fatalf("status %s: %s", b.Run().Status, b.Run().Error)
		}
		return wd, b
	}
	_, whole := run(false)
	wd, resumed := run(true)
	want, got := requests(whole), requests(resumed)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("resumed run's requests\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if last := want[len(want)-1]; !strings.Contains(last, `{"role":"assistant","content":"done 3"},{"role":"user","content":"Sum up"}`) ||
		!strings.Contains(last, `{"role":"user","content":"Try 1"}`) {
		t.Errorf("the last request does not carry the conversation: %s", last)
	}
	if r := runCLI(t, wd, "replay", filepath.Join(wd, "bb.json"), "--offline", "-q"); r.code != 0 {
		t.Errorf("offline replay: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The dry run says which steps send the agent's conversation, and its
// bound.
func TestMemoryDryRun(t *testing.T) {
	wd := t.TempDir()
	plan := strings.Replace(memoryPlan, "memory: conversation", "memory: {mode: conversation, max_tokens: 8000}", 1)
	if err := os.WriteFile(filepath.Join(wd, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, wd, "run", "plan.yaml", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "ask coder (with its conversation so far, up to 8000 tokens): Sum up") {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

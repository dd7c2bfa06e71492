package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// examples/plan-tools: the script agent's tool call runs the plan's
// command (its result, recorded as kind tool, is the file's line count),
// and the offline replay runs no command: it matches with the file the
// tool read gone.
func TestPlanToolsExample(t *testing.T) {
	wd := t.TempDir()
	r := runCLI(t, wd, "run", filepath.Join(repoRoot(), "examples/plan-tools/plan.yaml"), "-q")
	if r.code != 0 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
	bb := blackboardPath(t, r.stdout)
	b, err := board.Load(bb)
	if err != nil {
		t.Fatal(err)
	}
	found, words := false, false
	for _, rec := range b.Recordings() {
		if rec.Kind == "tool" && rec.Label == "count" && strings.Contains(string(rec.Response), `"text":"3\n"`) {
			found = true
		}
		// count_words runs words.yaml as a tool: its outputs, as JSON.
		if rec.Kind == "tool" && rec.Label == "count" && strings.Contains(string(rec.Response), `{\"outputs\":{\"words\":\"3\"},\"status\":\"succeeded\"}`) {
			words = true
		}
	}
	if !found {
		t.Errorf("no recorded call of count_lines answering 3: %v", b.Recordings())
	}
	if !words {
		t.Errorf("no recorded call of the sub-plan tool count_words answering 3: %v", b.Recordings())
	}
	if err := os.Remove(filepath.Join(wd, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, wd, "replay", bb, "--offline", "-q"); r.code != 0 {
		t.Fatalf("replay --offline: exit %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(wd, "notes.txt")); err == nil {
		t.Error("the offline replay ran a command")
	}
}

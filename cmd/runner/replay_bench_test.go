package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkReplay1000 replays, offline, a recorded run of 1000 steps: a
// loop of a model call (script provider), a board write, a command and a
// branch, 250 times.
func BenchmarkReplay1000(b *testing.B) {
	dir := b.TempDir()
	var plan strings.Builder
	plan.WriteString("version: 1\nlimits: {max_steps: 2000}\nagents:\n  bot:\n    provider: script\n    responses:\n")
	for i := 0; i < 250; i++ {
		fmt.Fprintf(&plan, "      - answer number %d\n", i)
	}
	plan.WriteString(`steps:
  - {label: ask, type: llm, agent: bot, prompt: "round ${{ steps.ask.visits }}", max_visits: 250}
  - {label: note, type: board, op: write, key: last, value: "${{ steps.ask.output }}", max_visits: 250}
  - {label: tick, type: command, run: "true", max_visits: 250}
  - label: loop
    type: branch
    max_visits: 250
    cases:
      - {when: steps.ask.visits < 250, goto: ask}
`)
	planPath := filepath.Join(dir, "plan.yaml")
	os.WriteFile(planPath, []byte(plan.String()), 0o644)
	recorded := filepath.Join(dir, "bb.json")
	if code := run([]string{"run", planPath, "--out", recorded, "--workdir", dir, "-q"}, nil, io.Discard, os.Stderr); code != 0 {
		b.Fatalf("recording: exit %d", code)
	}
	out := filepath.Join(dir, "replay.json")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if code := run([]string{"replay", recorded, "--offline", "--out", out, "-q"}, nil, io.Discard, os.Stderr); code != 0 {
			b.Fatalf("replay: exit %d", code)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/replay")
}

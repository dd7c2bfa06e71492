package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkReplay replays, offline, a recorded run of 1,000 and 10,000
// steps: a loop of a model call (script provider), a board write, a
// command and a branch, 250 and 2,500 times. The whole `runner replay`
// command, checks and the written board included.
func BenchmarkReplay(b *testing.B) {
	for _, rounds := range []int{250, 2500} {
		b.Run(fmt.Sprintf("steps=%d", 4*rounds), func(b *testing.B) { benchReplay(b, rounds) })
	}
}

func benchReplay(b *testing.B, rounds int) {
	dir := b.TempDir()
	var plan strings.Builder
	fmt.Fprintf(&plan, "version: 1\nlimits: {max_steps: %d}\nagents:\n  bot:\n    provider: script\n    responses:\n", 8*rounds)
	for i := 0; i < rounds; i++ {
		fmt.Fprintf(&plan, "      - answer number %d\n", i)
	}
	fmt.Fprintf(&plan, `steps:
  - {label: ask, type: llm, agent: bot, prompt: "round ${{ steps.ask.visits }}", max_visits: %[1]d}
  - {label: note, type: board, op: write, key: last, value: "${{ steps.ask.output }}", max_visits: %[1]d}
  - {label: tick, type: command, run: "true", max_visits: %[1]d}
  - label: loop
    type: branch
    max_visits: %[1]d
    cases:
      - {when: steps.ask.visits < %[1]d, goto: ask}
`, rounds)
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

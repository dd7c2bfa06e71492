package main

import (
	"io"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/agents"
)

// A running llm step's line shows the last line of its streamed answer so
// far; a new visit starts it again, and a finished step's goes.
func TestProgressShowsStreamedAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   string
	}{
		{"first words", []string{"Guard the ", "empty slice"}, "fix  0s  Guard the empty slice"},
		{"the last line", []string{"--- a/stats.go\n+++ b/", "stats.go\n@@ -4,6"}, "fix  0s  @@ -4,6"},
		{"a line just ended", []string{"one\ntwo\n"}, "fix  0s  two"},
		{"a long line keeps its end", []string{strings.Repeat("é", 300) + "end"}, "éend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProgress(io.Discard, false, false)
			p.StepStarted("fix", 1, "")
			for _, c := range tc.chunks {
				p.streamed(agents.StreamChunk{Agent: "coder", Label: "fix", Visit: 1, Call: 1, Text: c})
			}
			row := p.runningRows(p.running["fix"], "", '*')[0]
			if !strings.HasSuffix(row, tc.want) || len(p.streamTail["fix"]) > streamTailMax {
				t.Errorf("row %q, want it to end in %q", row, tc.want)
			}
			p.StepStarted("fix", 2, "")
			if row := p.runningRows(p.running["fix"], "", '*')[0]; row != "* fix #2  0s" {
				t.Errorf("the next visit's row: %q", row)
			}
		})
	}
	p := newProgress(io.Discard, false, false)
	p.streamed(agents.StreamChunk{Label: "gone", Text: "late"})
	if len(p.streamTail) != 0 {
		t.Error("a chunk of a step not running was kept")
	}
}

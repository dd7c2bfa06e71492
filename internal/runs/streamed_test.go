package runs

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/agents"
)

// The running file holds the end of each visit's streamed answer, written
// shortly after the pieces come, for runner serve; a piece of a visit not
// running is dropped.
func TestRunningFileHoldsStreamedAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   string
	}{
		{"pieces", []string{"--- a/stats.go\n", "+++ b/stats.go"}, "--- a/stats.go\n+++ b/stats.go"},
		{"the end of a long answer", []string{strings.Repeat("x", answerTail), "end"}, strings.Repeat("x", answerTail-3) + "end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "blackboard.json")
			r := trackRunning(path, nil, nil)
			defer r.close()
			r.StepStarted("fix", 1, "")
			for _, c := range tc.chunks {
				r.streamed(agents.StreamChunk{Agent: "coder", Label: "fix", Visit: 1, Call: 1, Text: c})
			}
			r.streamed(agents.StreamChunk{Label: "other", Visit: 1, Text: "dropped"})
			var got []RunningStep
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				got = readRunningFile(RunningPath(path))
				if len(got) == 1 && got[0].Answer != "" {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if len(got) != 1 || got[0].Answer != tc.want {
				t.Fatalf("running file = %+v", got)
			}
		})
	}
}

package runs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// A streamed answer goes into the running file as it comes, its end
// only, so that `runner serve` shows it; other streams go only where
// they went.
func TestRunningFileShowsTheAnswerAsItComes(t *testing.T) {
	bb := filepath.Join(t.TempDir(), "blackboard.json")
	r := trackRunning(bb, nil)
	defer r.close()
	read := func() []RunningStep {
		t.Helper()
		var l []RunningStep
		data, err := os.ReadFile(RunningPath(bb))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	out := r.output(nil)
	if w := out("test", 1, "stdout"); w != nil {
		t.Errorf("a test's output with no --show-output went to %T", w)
	}
	r.StepStarted("fix", 1, "")
	w := out("fix", 1, "answer")
	tests := []struct {
		name, write, want string
		wait              time.Duration
	}{
		{"a piece, within the spacing", "--- a/stats.go\n", "--- a/stats.go\n", 2 * answerEvery},
		{"the next", "+++ b/stats.go\n", "--- a/stats.go\n+++ b/stats.go\n", 2 * answerEvery},
		{"its end only", strings.Repeat("é", answerTail), strings.Repeat("é", answerTail/2), 2 * answerEvery},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w.Write([]byte(tc.write))
			time.Sleep(tc.wait)
			l := read()
			if len(l) != 1 || l[0].Label != "fix" || l[0].Answer != tc.want {
				t.Errorf("running = %+v", l)
			}
		})
	}
	r.StepFinished(board.StepRecord{Label: "fix", Visit: 1})
	if l := read(); len(l) != 0 {
		t.Errorf("a finished visit is still listed: %+v", l)
	}
}

package report

import (
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// The header counts a failure under continue_on_error as tolerated, not
// as a failure of the run.
func TestReportCountsToleratedFailures(t *testing.T) {
	ok := `{"output":""}`
	cases := []struct {
		name  string
		steps []board.StepRecord
		want  string
	}{
		{"one tolerated", []board.StepRecord{step("a", 1, "", "succeeded", 0, 10, ok), step("b", 1, "", "failed", 20, 10, ok)},
			`<dd id="run-counts">1 succeeded, 1 failure tolerated</dd>`},
		{"two tolerated, one failed", []board.StepRecord{step("lint", 1, "checks", "failed", 0, 10, ok),
			step("b", 1, "", "failed", 20, 10, ok), step("last", 1, "", "failed", 40, 10, ok)},
			`<dd id="run-counts">1 failed, 2 failures tolerated</dd>`},
		{"none tolerated", []board.StepRecord{step("a", 1, "", "failed", 0, 10, ok)},
			`<dd id="run-counts">1 failed</dd>`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := render(t, board.Run{ID: "r", Status: "failed"}, c.steps, nil)
			if !strings.Contains(out, c.want) {
				i := strings.Index(out, `id="run-counts"`)
				t.Errorf("header: want %s, got %.80s", c.want, out[max(i-4, 0):])
			}
		})
	}
}

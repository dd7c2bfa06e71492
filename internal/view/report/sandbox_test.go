package report

import (
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// A sandboxed step's page says how it was confined, and says loudly when
// an optional sandbox was missing.
func TestReportShowsTheSandbox(t *testing.T) {
	out := render(t, board.Run{ID: "r", Status: "succeeded"}, []board.StepRecord{
		step("a", 1, "", "succeeded", 0, 10, `{"output":"","exit_code":0,"sandbox":{"mode":"strict","active":true,"landlock":7,"network":false}}`),
		step("b", 1, "", "succeeded", 20, 10, `{"output":"","exit_code":0,"sandbox":{"mode":"optional","active":false,"network":true,"missing":"user namespaces are disabled"}}`),
		step("last", 1, "", "succeeded", 40, 10, `{"output":"","exit_code":0}`),
	}, nil)
	for _, want := range []string{
		`<div class="meta sandbox">sandbox strict: namespaces, Landlock ABI 7, no network</div>`,
		`<div class="meta sandbox">sandbox optional: NOT confined: user namespaces are disabled</div>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %s", want)
		}
	}
	if n := strings.Count(out, `class="meta sandbox"`); n != 2 {
		t.Errorf("%d sandbox lines, want 2 (none for the step without one)", n)
	}
}

package report

import (
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// Each step visit has an anchor named by its label and visit, the same in
// every report of the run, and the timeline links to it; a visit run
// again on resume keeps the plain anchor for its last run. The plan's
// source is in the page, folded.
func TestReportAnchorsAndPlanSource(t *testing.T) {
	ok := `{"output":""}`
	out := render(t, board.Run{ID: "r", Status: "succeeded"}, []board.StepRecord{
		step("a", 1, "", "succeeded", 0, 10, ok), step("b", 1, "", "interrupted", 20, 10, `null`),
		step("b", 1, "", "succeeded", 1000, 10, ok), step("b", 2, "", "succeeded", 1020, 10, ok)}, nil)
	for _, want := range []string{
		`<details class="step" id="step-a-1" data-label="a" data-visit="1"`,
		`<details class="step" id="step-b-1-earlier1" data-label="b" data-visit="1" data-type="command" data-status="interrupted"`,
		`<details class="step" id="step-b-1" data-label="b" data-visit="1" data-type="command" data-status="succeeded"`,
		`<details class="step" id="step-b-2" data-label="b" data-visit="2"`,
		`<a href="#step-b-2">b #2</a>`, `<a href="#step-a-1">a</a>`,
		"<details id=\"plan-source\"><summary>plan source</summary><pre>version: 1\nname: shapes\n",
		`{label: lint, type: command, run: &#34;false&#34;, continue_on_error: true}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %s", want)
		}
	}
	if strings.Contains(out, `<details id="plan-source" open`) {
		t.Error("the plan source is not folded")
	}
}

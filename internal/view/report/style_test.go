package report

import (
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// The page carries its filter (radio buttons and the CSS rules they
// drive, no script), its phone layout and its dark colours. What they do
// in a browser is checked in real Chromium by cmd/runner's
// TestReportFilterPhoneDarkInChromium; this checks they are in every page.
func TestReportFilterAndStyles(t *testing.T) {
	ok := `{"output":""}`
	out := render(t, board.Run{ID: "r", Status: "failed"}, []board.StepRecord{
		step("a", 1, "", "succeeded", 0, 10, ok), step("last", 1, "", "failed", 20, 10, ok)}, nil)
	for _, want := range []string{
		`<input type="radio" class="fr" name="filter" id="f-all" checked>`,
		`<label for="f-failed">failed</label><label for="f-llm">model calls</label><label for="f-input">inputs</label>`,
		`#f-failed:checked ~ #steps .step:not(.group):not([data-status="failed"])`,
		`@media (prefers-color-scheme: dark)`, `@media (max-width: 700px)`,
		`<div id="steps">`,
		`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %s", want)
		}
	}
	if strings.Contains(out, "<script") {
		t.Error("the report has a script")
	}
}

package report

import (
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// A JSON value holding <, > or & (a board value, an input's answer, a
// result without a view) reads as the run holds it: escaped once, by the
// page, not also as \u003c by the JSON encoder.
func TestReportJSONValuesReadAsWritten(t *testing.T) {
	out := render(t, board.Run{ID: "r", Status: "succeeded"},
		[]board.StepRecord{step("a", 1, "", "succeeded", 0, 10, `{"output":"x"}`)},
		func(b *board.Board) {
			if _, err := b.Write(board.WriteOp{Key: "note", Value: map[string]any{"html": "<b>bold</b> & co"}, Author: "bot", ExpectVersion: -1}); err != nil {
				t.Fatal(err)
			}
		})
	if strings.Contains(out, `\u003c`) || strings.Contains(out, `\u0026`) {
		t.Errorf("a JSON value shows escaped twice:\n%s", out[strings.Index(out, `\u00`)-40:][:120])
	}
	if !strings.Contains(out, `&#34;html&#34;: &#34;&lt;b&gt;bold&lt;/b&gt; &amp; co&#34;`) {
		t.Errorf("the board value is not shown as written")
	}
}

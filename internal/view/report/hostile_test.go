package report

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/testutil/hostile"
)

// The hostile values as a run's error, step outputs, board keys, values
// and authors: the report, read by a real HTML parser, has as many links,
// images, scripts and other active elements as for a plain value, no
// event handler or javascript: URL, and shows the value's text.
func TestReportHostileValuesStayText(t *testing.T) {
	page := func(t *testing.T, v string) string {
		k := strings.Map(func(r rune) rune {
			if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
				return ' '
			}
			return r
		}, v)
		out, _ := json.Marshal(map[string]any{"output": v, "exit_code": 1, "stdout": v, "stderr": v})
		failed := step("a", 1, "", "failed", 0, 5, string(out))
		failed.Error = v
		return render(t, board.Run{ID: "run-1", Status: board.StatusFailed, Error: v},
			[]board.StepRecord{failed}, func(b *board.Board) {
				if _, err := b.Write(board.WriteOp{Key: k, Author: k, Value: v, ExpectVersion: -1}); err != nil {
					t.Fatal(err)
				}
			})
	}
	plain := hostile.Parse(t, page(t, "plain"))
	for _, v := range hostile.Values {
		t.Run(v.Name, func(t *testing.T) {
			doc := page(t, v.Text)
			got := hostile.Parse(t, doc)
			first, _, _ := strings.Cut(strings.ReplaceAll(v.Text, "\r", "\n"), "\n")
			hostile.SameHTML(t, plain, got, hostile.Visible(first))
		})
	}
}

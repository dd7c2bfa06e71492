package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/testutil/hostile"
)

// The hostile values as a run's error, step outputs, board keys, values
// and authors: the report, read by a real HTML parser, has as many links,
// images, scripts and other active elements as for a plain value, no
// event handler or javascript: URL, and shows the value's text; as the
// file `runner report` writes and as serve's live page.
func TestReportHostileValuesStayText(t *testing.T) {
	page := func(t *testing.T, v string, live bool) string {
		k := strings.Map(func(r rune) rune {
			if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
				return ' '
			}
			return r
		}, v)
		out, _ := json.Marshal(map[string]any{"output": v, "exit_code": 1, "stdout": v, "stderr": v})
		failed := step("a", 1, "", "failed", 0, 5, string(out))
		failed.Error = v
		run := board.Run{ID: "run-1", Status: board.StatusFailed, Error: v, PlanSource: planSrc, PlanPath: "/p/plan.yaml", StartedAt: t0}
		b := board.New(run)
		if err := b.AddStep(failed); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Write(board.WriteOp{Key: k, Author: k, Value: v, ExpectVersion: -1}); err != nil {
			t.Fatal(err)
		}
		opt := Options{Now: t0.Add(time.Minute)}
		if live {
			// serve's page: the same report with its script and a step
			// running under the hostile label.
			opt.Live = &Live{Script: "/app.js", CSRF: "c", By: v, Back: "/", Graph: "/g", Events: "/e",
				Running: []runs.RunningStep{{Label: k, Visit: 1, Since: t0, Answer: v}}}
		}
		var buf bytes.Buffer
		if err := WriteWith(&buf, b, opt); err != nil {
			t.Fatal(err)
		}
		return unlazy(t, buf.String())
	}
	for _, live := range []bool{false, true} {
		plain := hostile.Parse(t, page(t, "plain", live))
		for _, v := range hostile.Values {
			t.Run(fmt.Sprintf("%s/live=%v", v.Name, live), func(t *testing.T) {
				got := hostile.Parse(t, page(t, v.Text, live))
				first, _, _ := strings.Cut(strings.ReplaceAll(v.Text, "\r", "\n"), "\n")
				hostile.SameHTML(t, plain, got, hostile.Visible(first))
			})
		}
	}
}

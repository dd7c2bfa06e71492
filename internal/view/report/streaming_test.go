package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/runs"
)

// serve's live page shows the answer a running step is streaming, as it
// stands; a running step with no streamed answer shows none.
func TestLivePageShowsStreamedAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		want         string
	}{
		{"streaming", "--- a/stats.go\n+++ b/stats.go", `<details class="streaming" open data-label="fix"><summary>fix: the model's answer so far</summary><pre>--- a/stats.go` + "\n" + `&#43;&#43;&#43; b/stats.go</pre></details>`},
		{"not streaming", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := board.New(board.Run{ID: "run-1", Status: board.StatusRunning, PlanSource: planSrc, PlanPath: "/p/plan.yaml", StartedAt: t0})
			opt := Options{Now: t0.Add(time.Minute), Live: &Live{Script: "/app.js", CSRF: "c", Back: "/", Graph: "/g", Events: "/e",
				Running: []runs.RunningStep{{Label: "fix", Visit: 1, Since: t0, Answer: tc.answer}}}}
			var buf bytes.Buffer
			if err := WriteWith(&buf, b, opt); err != nil {
				t.Fatal(err)
			}
			page := buf.String()
			if tc.want == "" {
				if strings.Contains(page, `class="streaming"`) {
					t.Error("a streamed answer is shown for a step not streaming")
				}
				return
			}
			if !strings.Contains(page, tc.want) {
				i := strings.Index(page, "streaming")
				t.Errorf("the page lacks %s; near it:\n%s", tc.want, page[max(i-100, 0):min(i+400, len(page))])
			}
		})
	}
}

package report

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// A step's line shows its record as saved, whatever the numbers and
// times in it: a view keeps them in fewer bytes than the record, and
// must not cut one short.
func TestStepLineShowsTheRecordAsSaved(t *testing.T) {
	wide := int64(1) << 32 // past what a view keeps in 32 bits
	far := time.Date(2999, 12, 31, 23, 59, 59, 999_000_000, time.FixedZone("x", 5*3600))
	for _, tc := range []struct {
		name string
		edit func(*board.StepRecord)
		want []string
	}{
		{"plain", func(*board.StepRecord) {}, []string{`data-visit="1"`, `started 10:00:00.000`}},
		{"a visit past 32 bits", func(s *board.StepRecord) { s.Visit = int(wide + 1) }, []string{`data-visit="4294967297"`, `a #4294967297`, `step-a-4294967297`}},
		{"attempts past 32 bits", func(s *board.StepRecord) { s.Attempts = int(wide + 3) }, []string{`4294967299 attempts`}},
		{"a far time in its own zone", func(s *board.StepRecord) { s.StartedAt, s.FinishedAt = far, far }, []string{`started 18:59:59.999`}},
		{"no times", func(s *board.StepRecord) { s.StartedAt, s.FinishedAt = time.Time{}, time.Time{} }, []string{`started 00:00:00.000`}},
		{"goto, error, delays", func(s *board.StepRecord) { s.Goto, s.Error, s.Delays = "b", "it broke", []int64{7, 9} },
			[]string{`, → b`, `<pre class="err">it broke</pre>`, `retry delays 7ms 9ms`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.name, "past 32 bits") && strconv.IntSize < 64 {
				t.Skip("an int of 32 bits holds no such number")
			}
			s := step("a", 1, "", "failed", 0, 5, `{"exit_code":1}`)
			tc.edit(&s)
			page := render(t, board.Run{ID: "r", Status: board.StatusFailed}, []board.StepRecord{s}, nil)
			for _, w := range tc.want {
				if !strings.Contains(page, w) {
					t.Errorf("the page lacks %q", w)
				}
			}
		})
	}
}

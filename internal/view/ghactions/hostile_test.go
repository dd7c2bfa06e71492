package ghactions

import (
	"testing"

	"github.com/planrunner/runner/internal/testutil/hostile"
)

// Every value the summary shows, whatever it holds, renders (by a real
// GFM renderer, raw HTML let through as on GitHub) as text the reader
// sees, and adds no element: no link (autolinked or not), image,
// heading, table, row, list, code, HTML or script.
func TestSummaryHostileValuesStayText(t *testing.T) {
	summary := func(v string) Summary {
		return Summary{Run: v, Status: v, Plan: v, Duration: v, Error: v,
			Steps:    []SummaryStep{{Name: v, Type: v, Status: v, Duration: v}},
			Failures: []SummaryFailure{{Step: v, Place: v, Message: v}},
			Tokens:   []SummaryTokens{{Model: v, Calls: 1, Cost: v}},
			Cost:     v, Report: v, Blackboard: v}
	}
	plain := hostile.Parse(t, hostile.GFM(t, summary("plain").Markdown()))
	for _, v := range hostile.Values {
		t.Run(v.Name, func(t *testing.T) {
			md := summary(v.Text).Markdown()
			got := hostile.Parse(t, hostile.GFM(t, md))
			hostile.Same(t, plain, got, hostile.Visible(v.Text))
			if t.Failed() {
				t.Logf("markdown:\n%s", md)
			}
		})
	}
}

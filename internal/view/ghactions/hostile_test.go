package ghactions

import (
	"strings"
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

// The hostile values in every field of an annotation stay one command
// with exactly its own properties, and the message reads back as written.
func TestAnnotationHostileValues(t *testing.T) {
	for _, v := range hostile.Values {
		t.Run(v.Name, func(t *testing.T) {
			cmd := Annotation{File: v.Text, Line: 2, Title: v.Text, Message: v.Text}.String()
			if strings.ContainsAny(cmd, "\r\n") {
				t.Fatalf("the command spans lines: %q", cmd)
			}
			head, msg, ok := strings.Cut(strings.TrimPrefix(cmd, "::error "), "::")
			if !ok {
				t.Fatalf("no message: %q", cmd)
			}
			var keys []string
			for _, p := range strings.Split(head, ",") {
				k, _, _ := strings.Cut(p, "=")
				keys = append(keys, k)
			}
			if strings.Join(keys, ",") != "file,line,title" {
				t.Errorf("properties %v in %q", keys, cmd)
			}
			unescape := strings.NewReplacer("%0D", "\r", "%0A", "\n", "%3A", ":", "%2C", ",", "%25", "%")
			if got := unescape.Replace(msg); got != v.Text {
				t.Errorf("message reads back %q, want %q", got, v.Text)
			}
		})
	}
}

// A secret is masked before it is escaped: escaped, it would no longer
// match the mask and would show.
func TestSummaryMasksBeforeEscaping(t *testing.T) {
	const secret = "sk_live:ab-cd.ef@x"
	mask := func(s string) string { return strings.ReplaceAll(s, secret, "***") }
	s := Summary{Run: secret, Status: secret, Plan: secret, Duration: secret, Error: secret, Cost: secret, Report: secret, Blackboard: secret,
		Steps:    []SummaryStep{{Name: secret, Type: secret, Status: secret, Duration: secret}},
		Failures: []SummaryFailure{{Step: secret, Place: secret, Message: secret}},
		Tokens:   []SummaryTokens{{Model: secret, Cost: secret}}}
	md := mask(s.Map(mask).Markdown())
	page := hostile.Parse(t, hostile.GFM(t, md))
	for _, bit := range []string{"sk", "live", "ab-cd"} {
		if strings.Contains(page.Text, bit) {
			t.Errorf("the summary shows %q of the secret:\n%s", bit, md)
		}
	}
}

package ghactions

import (
	"strings"
	"testing"
)

// Every field that reaches a workflow command is escaped by GitHub's
// rules: a file name or message cannot end the properties, add one, or
// start a line (a second command) of its own.
func TestAnnotationEscapesEveryField(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    Annotation
		want string
	}{
		{"plain", Annotation{File: "a.go", Line: 3, Col: 2, Title: "t", Message: "m"}, "::error file=a.go,line=3,col=2,title=t::m"},
		{"no file", Annotation{Level: "warning", Message: "m"}, "::warning::m"},
		{"unknown level is error", Annotation{Level: "debug", Message: "m"}, "::error::m"},
		{"file with , and :", Annotation{File: "a,line=1:b.go", Line: 1, Message: "m"}, "::error file=a%2Cline=1%3Ab.go,line=1::m"},
		{"title with ::", Annotation{Title: "x::error::y", Message: "m"}, "::error title=x%3A%3Aerror%3A%3Ay::m"},
		{"message with a line break and a command", Annotation{Message: "a\n::error::b\r\nc"}, "::error::a%0A::error::b%0D%0Ac"},
		{"percent", Annotation{File: "100%.go", Title: "%0A", Message: "50%0A"}, "::error file=100%25.go,title=%250A::50%250A"},
		{"message keeps : and ,", Annotation{Message: "a: b, c"}, "::error::a: b, c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.a.String()
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if strings.ContainsAny(got, "\r\n") {
				t.Errorf("the command spans lines: %q", got)
			}
		})
	}
	if got := Group("a\n::endgroup::%"); got != "::group::a%0A::endgroup::%25" {
		t.Errorf("Group: %s", got)
	}
}

// A stream keeps commands off but for its own, even when the text before
// a command ended mid-line, and turns them on again when closed.
func TestStreamCommandsOnlyOnTheirOwnLines(t *testing.T) {
	var b strings.Builder
	s := newStream(&b, "T", func(s string) string { return strings.ReplaceAll(s, "sekret", "***") })
	s.Write([]byte("::error::from a step\nhalf a line"))
	s.Commands("::group::sekret", "::error::a\nb")
	s.Write([]byte("::endgroup::\n"))
	s.Close()
	want := "::stop-commands::T\n::error::from a step\nhalf a line\n::T::\n::group::***\n::error::a%0Ab\n::stop-commands::T\n::endgroup::\n::T::\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	if a, b := NewToken(), NewToken(); a == b || len(a) < 32 {
		t.Errorf("tokens %q and %q: want long and different", a, b)
	}
}

// The summary's values are text: none adds a link, an image, HTML, a row
// or a cell.
func TestSummaryEscapesValues(t *testing.T) {
	s := Summary{Run: "r`1", Status: "failed", Plan: "p|lan", Duration: "1s",
		Steps:    []SummaryStep{{Name: "a|b\n| x | y |", Type: "command", Status: "failed", Duration: "1ms"}},
		Failures: []SummaryFailure{{Step: "t", Place: "a.go:1", Message: "![img](http://x/y.png) <img src=x> [l](u) **b**"}}}
	md := s.Markdown()
	for _, bad := range []string{"![img]", "<img", "[l](u)", "**b**", "p|lan", "a|b", "\n| x"} {
		if strings.Contains(md, bad) {
			t.Errorf("%q came through unescaped:\n%s", bad, md)
		}
	}
	if !strings.Contains(md, "Run ``r`1``") {
		t.Errorf("the run id is not code:\n%s", md)
	}
}

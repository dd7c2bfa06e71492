package mdtext

import (
	"testing"

	"github.com/planrunner/runner/internal/testutil/hostile"
)

func TestText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain words", "plain words"},
		{"a|b", `a\|b`},
		{"https://x", "https:\u2060//x"},
		{"www.x.com", "www\u2060.x.com"},
		{"WWW.x", "WWW\u2060.x"},
		{"a@b.co", "a@\u2060b.co"},
		{"#1 :e: a: b", "#\u20601 :\u2060e: a: b"},
		{`{"k":1}`, "{\"k\":\u20601}"},
		{"<b>&amp;", "&lt;b&gt;&amp;amp;"},
		{"a\r\nb\u2028c\x00d", "a  b cd"},
		{"[x](y) **z**", `\[x\]\(y) \*\*z\*\*`},
		{"- a-b", `\- a-b`},
		{"12. x.y", `12\. x.y`},
		{"1) x", `1\) x`},
		{"===", `\===`},
		{"+ x", `\+ x`},
	} {
		if got := Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCodeAndFence(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Code("a.go:1"), "`a.go:1`"},
		{Code("r`1"), "``r`1``"},
		{Code("`x"), "`` `x ``"},
		{Code("a\nb"), "`a b`"},
		{Fence("json", "{}"), "```json\n{}\n```\n"},
		{Fence("", "```\nx\n````"), "`````\n```\nx\n````\n`````\n"},
		{Fence("a`b\nc", "x\n"), "```ab c\nx\n```\n"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// Each place a value can stand in a Markdown document, rendered by a
// real GFM renderer: the value adds no element and reads as written.
func TestHostileValuesStayText(t *testing.T) {
	doc := func(v string) string {
		return "Para " + Text(v) + " and " + Code(v) + ".\n\n- " + Text(v) + "\n\n| k | v |\n|---|---|\n| " + Text(v) + " | x |\n\n" + Fence("text", v)
	}
	plain := hostile.Parse(t, hostile.GFM(t, doc("plain")))
	for _, v := range hostile.Values {
		t.Run(v.Name, func(t *testing.T) {
			md := doc(v.Text)
			got := hostile.Parse(t, hostile.GFM(t, md))
			hostile.Same(t, plain, got, hostile.Visible(v.Text))
			if t.Failed() {
				t.Logf("markdown:\n%s", md)
			}
		})
	}
}

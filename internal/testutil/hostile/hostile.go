// Package hostile is for tests of the outputs other programs render (the
// GitHub step summary, the board's markdown view, the HTML report, JUnit
// XML): one table of values written to become markup, a real GFM
// renderer (goldmark with GitHub's extensions, raw HTML let through as
// GitHub's summary does) and an HTML check that a value added no element
// and stayed readable. Tests only: it brings goldmark into the module
// graph for them, never into the runner binary. It may import the
// standard library, goldmark and golang.org/x/net/html.
package hostile

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
	xhtml "golang.org/x/net/html"
)

// Value is a value written to become markup in some renderer.
type Value struct{ Name, Text string }

// Values is the table every rendered output is tested with.
var Values = []Value{
	{"bare url", "see https://evil.example/x now"},
	{"www", "go to www.evil.example today"},
	{"email", "mail a@evil.co please"},
	{"markdown link", "[x](https://evil.example)"},
	{"markdown image", "![i](https://evil.example/i.png)"},
	{"img onerror", "<img src=x onerror=alert(1)>"},
	{"script", "<script>alert(1)</script>"},
	{"heading", "# heading"},
	{"table", "| a | b |\n|---|---|\n| c | d |"},
	{"backtick fence", "```\n</details>\n```"},
	{"tilde fence", "~~~\nx\n~~~"},
	{"bold", "**bold** _em_ ~~del~~"},
	{"list", "- item\n1. one"},
	{"javascript url", "[c](javascript:alert(1)) javascript:alert(1)"},
	{"entities", "&lt;b&gt;x&lt;/b&gt; &amp;"},
	{"mention", "@octocat"},
	{"issue ref", "#123"},
	{"emoji", ":smile:"},
	{"crlf", "a\r\n\r\n# b\rc"},
	{"nul", "a\x00b"},
	{"line separator", "a\u2028# b\u2029c"},
	{"autolink", "<https://evil.example>"},
	{"html comment", "x <!-- y"},
	{"blockquote", "> quoted"},
	{"backtick", "a`b``c"},
}

// GFM renders md as GitHub does, as far as a Go renderer can: GFM
// (tables, strikethrough, task lists, Linkify's extended autolinks) with
// raw HTML kept.
func GFM(t testing.TB, md string) string {
	t.Helper()
	var b bytes.Buffer
	r := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))
	if err := r.Convert([]byte(md), &b); err != nil {
		t.Fatalf("goldmark: %v", err)
	}
	return b.String()
}

// Visible is what a reader should see of v: valid UTF-8 without control
// characters, whitespace (line breaks too) collapsed.
func Visible(v string) string {
	v = strings.Map(func(r rune) rune {
		switch r {
		case '\r', '\n', '\t', '\u2028', '\u2029':
			return ' '
		}
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return -1
		}
		return r
	}, v)
	return strings.Join(strings.Fields(v), " ")
}

// Page is an HTML document's elements (in order, with their
// attributes) and its text, whitespace collapsed and word joiners
// dropped.
type Page struct {
	Tags []string
	Text string
	Bad  []string // event handlers, javascript: URLs
}

// urlAttr are the attributes a browser follows as URLs.
var urlAttr = map[string]bool{"href": true, "src": true, "action": true, "formaction": true, "xlink:href": true,
	"data": true, "poster": true, "background": true, "srcset": true, "ping": true, "cite": true}

// Parse reads doc with a real HTML parser.
func Parse(t testing.TB, doc string) Page {
	t.Helper()
	n, err := xhtml.Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("html: %v", err)
	}
	var p Page
	var text strings.Builder
	var walk func(*xhtml.Node)
	walk = func(n *xhtml.Node) {
		switch n.Type {
		case xhtml.ElementNode:
			p.Tags = append(p.Tags, n.Data)
			for _, a := range n.Attr {
				k := strings.ToLower(a.Key)
				if strings.HasPrefix(k, "on") {
					p.Bad = append(p.Bad, n.Data+" "+a.Key+"="+a.Val)
				}
				if urlAttr[k] && strings.Contains(strings.ToLower(strings.Join(strings.Fields(a.Val), "")), "javascript:") {
					p.Bad = append(p.Bad, n.Data+" "+a.Key+"="+a.Val)
				}
			}
		case xhtml.TextNode:
			text.WriteString(n.Data)
			text.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	p.Text = strings.Join(strings.Fields(strings.ReplaceAll(text.String(), "\u2060", "")), " ")
	return p
}

// Same fails t unless hostile, the page with a hostile value where plain
// had a harmless one, has plain's elements exactly (the value added no
// link, image, heading, table, list, code, script or other markup of its
// own), no event handler or javascript: URL, and shows each of want.
func Same(t testing.TB, plain, hostile Page, want ...string) {
	t.Helper()
	if strings.Join(plain.Tags, " ") != strings.Join(hostile.Tags, " ") {
		i := 0
		for i < len(plain.Tags) && i < len(hostile.Tags) && plain.Tags[i] == hostile.Tags[i] {
			i++
		}
		from := max(0, i-5)
		t.Errorf("the value changed the document's elements, from element %d:\nplain:   %v\nhostile: %v", i,
			plain.Tags[from:min(len(plain.Tags), i+10)], hostile.Tags[from:min(len(hostile.Tags), i+10)])
	}
	if len(hostile.Bad) > 0 {
		t.Errorf("active attributes: %q", hostile.Bad)
	}
	for _, w := range want {
		if !strings.Contains(hostile.Text, w) {
			t.Errorf("the reader does not see %q in:\n%s", w, hostile.Text)
		}
	}
}

// active are the elements that fetch, run or link: in an HTML output a
// value must not add one.
var active = []string{"a", "img", "script", "iframe", "frame", "object", "embed", "svg", "math", "style",
	"link", "meta", "base", "form", "video", "audio", "source", "template"}

// SameHTML is Same for HTML pages that lay a value out by its shape (a
// multi-line value in a <pre>, a section only some keys start): hostile
// has as many active elements (links, images, scripts, frames, styles,
// forms, ...) of each kind as plain, no event handler or javascript:
// URL, and shows each of want.
func SameHTML(t testing.TB, plain, hostile Page, want ...string) {
	t.Helper()
	count := func(p Page) map[string]int {
		m := map[string]int{}
		for _, tag := range p.Tags {
			m[tag]++
		}
		return m
	}
	pc, hc := count(plain), count(hostile)
	for _, tag := range active {
		if pc[tag] != hc[tag] {
			t.Errorf("the value changed the number of <%s> elements: %d, plain %d", tag, hc[tag], pc[tag])
		}
	}
	if len(hostile.Bad) > 0 {
		t.Errorf("active attributes: %q", hostile.Bad)
	}
	for _, w := range want {
		if !strings.Contains(hostile.Text, w) {
			t.Errorf("the reader does not see %q", w)
		}
	}
}

// Package mdtext is runner's one escaper for GitHub Flavored Markdown:
// every value a Markdown output shows (the GitHub step summary, the
// board's markdown view) goes through it, so that a value reads as
// written and never becomes markup of its own: no link, image, heading,
// list, table row or cell, emphasis, HTML, code block end, and nothing
// the renderer or GitHub links by itself (bare URLs, www. names, e-mail
// addresses, @mentions, #123 references, :emoji:).
//
// It imports only the standard library.
package mdtext

import (
	"strings"
	"unicode/utf8"
)

// joiner is U+2060 WORD JOINER: invisible, it splits what autolinking
// and GitHub's text filters look for (a scheme's "://", "www.", "a@b",
// "@name", "#1", ":smile:") without changing what the reader sees.
const joiner = "\u2060"

// Text escapes s for Markdown inline text on one line, in a paragraph,
// a list item or a table cell: ASCII punctuation Markdown reads is
// backslashed (list and heading markers only where the value starts), &, < and > become entities (GitHub renders raw HTML),
// autolink and reference triggers get a word joiner, line breaks
// (including U+2028 and U+2029) become spaces and other control
// characters are dropped.
func Text(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				continue // not UTF-8
			}
		}
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '\r', '\n', '\t', '\v', '\f', '\u0085', '\u2028', '\u2029':
			b.WriteByte(' ')
		case ':':
			// "https://", ":smile:", "mailto:x": a joiner only before what
			// follows without a space.
			b.WriteByte(':')
			if rest := s[i+1:]; rest != "" && rest[0] != ' ' {
				b.WriteString(joiner)
			}
		case '@', '#':
			b.WriteString(string(r) + joiner)
		case '.', ')', '-', '+', '=':
			// Markup only at the start of a line, which a value starts
			// (a list item, a cell) but never continues: "1." "1)" "-"
			// "+" start lists, "---" and "===" headings or rules.
			if r == '.' && hasWWW(s[:i]) {
				b.WriteString(joiner)
			}
			if strings.TrimLeft(s[:i], " 0123456789") == "" {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		case '\\', '`', '*', '_', '[', ']', '(', '!', '|', '~', '$':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
				continue // control characters: nothing to show
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// hasWWW reports whether before ends in "www" (any case): a "." after
// it would start an extended www autolink.
func hasWWW(before string) bool {
	return len(before) >= 3 && strings.EqualFold(before[len(before)-3:], "www")
}

// Code shows s as an inline code span on one line, with a fence longer
// than any run of backticks inside it. Markdown is not read inside a
// code span, nor are URLs linked; a line break (which could end the
// paragraph) becomes a space. Not for table cells: GFM splits a cell
// at "|" even inside code.
func Code(s string) string {
	s = oneLine(s)
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || strings.TrimSpace(s) == "" {
		pad = " "
	}
	return fence + pad + s + pad + fence
}

// Fence returns s as a fenced code block tagged info, with a fence of
// backticks longer than any run of backticks in s (at least three), so
// no line of s can end the block early. The result ends with a newline.
func Fence(info, s string) string {
	s = strings.Map(func(r rune) rune {
		if r == 0 {
			return -1
		}
		return r
	}, s)
	fence := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return fence + oneLine(strings.ReplaceAll(info, "`", "")) + "\n" + s + fence + "\n"
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '\r', '\n', '\t', '\v', '\f', '\u0085', '\u2028', '\u2029':
			return ' '
		}
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

func longestRun(s string, c byte) int {
	longest, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			longest = max(longest, n)
		} else {
			n = 0
		}
	}
	return longest
}

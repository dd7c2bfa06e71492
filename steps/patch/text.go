package patch

import (
	"bytes"
	"strings"
)

// content is a text file split into lines. A line's text never holds its
// terminator; eol is "\n", "\r\n", or "" for a last line with no newline.
// Matching looks only at text, so a CRLF file matches an LF diff, and lines
// kept from the file keep their own terminators.
type content struct {
	text []string
	eol  []string
	nl   string // terminator for lines the diff adds: the file's majority

	norm [numWS][]string         // text under each whitespace level, built lazily
	idx  [numWS]map[string][]int // line -> positions, built lazily
}

func splitContent(b []byte) *content {
	n := bytes.Count(b, []byte{'\n'})
	c := &content{text: make([]string, 0, n+1), eol: make([]string, 0, n+1)}
	s := string(b)
	crlf := 0
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			c.text = append(c.text, s)
			c.eol = append(c.eol, "")
			break
		}
		line, eol := s[:i], "\n"
		if strings.HasSuffix(line, "\r") {
			line, eol = line[:len(line)-1], "\r\n"
			crlf++
		}
		c.text = append(c.text, line)
		c.eol = append(c.eol, eol)
		s = s[i+1:]
	}
	// The majority of terminated lines; a tie goes to CRLF, as a file with
	// any CRLF was most likely written that way on purpose.
	c.nl = "\n"
	lf := len(c.text) - crlf
	if len(c.text) > 0 && c.eol[len(c.eol)-1] == "" {
		lf--
	}
	if crlf > 0 && crlf >= lf {
		c.nl = "\r\n"
	}
	return c
}

func (c *content) bytes() []byte {
	n := 0
	for i := range c.text {
		n += len(c.text[i]) + len(c.eol[i])
	}
	b := make([]byte, 0, n)
	for i := range c.text {
		b = append(b, c.text[i]...)
		b = append(b, c.eol[i]...)
	}
	return b
}

// Whitespace levels, tried in this order.
const (
	wsExact    = iota // text as is (a trailing CR is never part of the text)
	wsTrailing        // trailing blanks ignored
	wsAll             // every run of blanks is one space, leading blanks ignored
	numWS
)

func normalize(s string, level int) string {
	switch level {
	case wsTrailing:
		return strings.TrimRight(s, " \t\v\f\r")
	case wsAll:
		return strings.Join(strings.Fields(s), " ")
	}
	return s
}

func normalizeAll(lines []string, level int) []string {
	if level == wsExact {
		return lines
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = normalize(l, level)
	}
	return out
}

func (c *content) lines(level int) []string {
	if level == wsExact {
		return c.text
	}
	if c.norm[level] == nil {
		c.norm[level] = normalizeAll(c.text, level)
	}
	return c.norm[level]
}

func (c *content) index(level int) map[string][]int {
	if c.idx[level] == nil {
		m := make(map[string][]int)
		for i, l := range c.lines(level) {
			m[l] = append(m[l], i)
		}
		c.idx[level] = m
	}
	return c.idx[level]
}

// matchAt reports whether pat (already normalized to level) sits at pos.
func (c *content) matchAt(pat []string, pos, level int) bool {
	lines := c.lines(level)
	if pos < 0 || pos+len(pat) > len(lines) {
		return false
	}
	for i, p := range pat {
		if lines[pos+i] != p {
			return false
		}
	}
	return true
}

// find returns every position in [lo, hi-len(pat)] where pat matches. It
// looks up the pattern's rarest line in the index, so a search costs about
// as much as the number of places that line occurs.
func (c *content) find(pat []string, lo, hi, level int) []int {
	if len(pat) == 0 || hi-lo < len(pat) {
		return nil
	}
	idx := c.index(level)
	best, bestN := -1, 0
	for i, p := range pat {
		n := len(idx[p])
		if n == 0 {
			return nil
		}
		if best < 0 || n < bestN {
			best, bestN = i, n
		}
	}
	var out []int
	for _, at := range idx[pat[best]] {
		pos := at - best
		if pos < lo || pos+len(pat) > hi {
			continue
		}
		if c.matchAt(pat, pos, level) {
			out = append(out, pos)
		}
	}
	return out
}

package patch

import (
	"strings"
	"unsafe"
)

// content is a text file seen as lines. It keeps the file's bytes and
// where each line ends, so a line's text is a slice of the file (no copy)
// and unchanged stretches can be copied out wholesale. A line's text never
// holds its terminator; matching looks only at text, so a CRLF file
// matches an LF diff, and lines kept from the file keep their own
// terminators.
type content struct {
	data string
	next []uint32 // next[i]: offset just past line i and its terminator (files are < 4 GiB, see maxFileSize)
	nl   string   // terminator for lines the diff adds: the file's majority

	norm [numWS][]string         // every line's text at each level, built lazily
	idx  [numWS]map[string][]int // line -> positions, built lazily

	heading []int32 // see headingAbove; built lazily
}

// b is shared, not copied: it must not change afterwards (file contents
// here never do: each is read or built once).
func splitContent(b []byte) *content {
	s := unsafe.String(unsafe.SliceData(b), len(b))
	c := &content{data: s, next: make([]uint32, 0, strings.Count(s, "\n")+1)}
	crlf, lf := 0, 0
	for at := 0; at < len(s); {
		i := strings.IndexByte(s[at:], '\n')
		if i < 0 {
			c.next = append(c.next, uint32(len(s)))
			break
		}
		if i > 0 && s[at+i-1] == '\r' {
			crlf++
		} else {
			lf++
		}
		at += i + 1
		c.next = append(c.next, uint32(at))
	}
	// The majority of terminated lines; a tie goes to CRLF, as a file with
	// any CRLF was most likely written that way on purpose.
	c.nl = "\n"
	if crlf > 0 && crlf >= lf {
		c.nl = "\r\n"
	}
	return c
}

// n is the number of lines.
func (c *content) n() int { return len(c.next) }

func (c *content) start(i int) int {
	if i == 0 {
		return 0
	}
	return int(c.next[i-1])
}

// line is line i's text, without its terminator.
func (c *content) line(i int) string {
	s := c.data[c.start(i):int(c.next[i])]
	if strings.HasSuffix(s, "\n") {
		s = s[:len(s)-1]
		s = strings.TrimSuffix(s, "\r")
	}
	return s
}

// openEnd reports whether the last line has no newline.
func (c *content) openEnd() bool {
	return len(c.data) > 0 && c.data[len(c.data)-1] != '\n'
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

// lines is every line's text at a whitespace level.
func (c *content) lines(level int) []string {
	if c.norm[level] == nil {
		out := make([]string, c.n())
		for i := range out {
			out[i] = normalize(c.line(i), level)
		}
		c.norm[level] = out
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
	if pos < 0 || pos+len(pat) > c.n() {
		return false
	}
	if level == wsExact && c.norm[wsExact] == nil {
		for i, p := range pat {
			if c.line(pos+i) != p {
				return false
			}
		}
		return true
	}
	lines := c.lines(level)
	for i, p := range pat {
		if lines[pos+i] != p {
			return false
		}
	}
	return true
}

// matchSide reports whether a side of ops, h's ('-' the old, '+' the
// new: the ops of the other kind left out), sits at pos at a whitespace
// level, as matchAt would for that side's lines normalized to level,
// without building them.
func (c *content) matchSide(h *hunk, ops []op, side byte, pos, level int) bool {
	skip := byte('+')
	if side == '+' {
		skip = '-'
	}
	if pos < 0 {
		return false
	}
	var lines []string
	if level != wsExact || c.norm[wsExact] != nil {
		lines = c.lines(level)
	}
	at := pos
	for _, o := range ops {
		if o.kind == skip {
			continue
		}
		if at >= c.n() {
			return false
		}
		if lines == nil {
			if c.line(at) != h.text(o) {
				return false
			}
		} else if lines[at] != normalize(h.text(o), level) {
			return false
		}
		at++
	}
	return at <= c.n() // an empty side matches only within the file, as in matchAt
}

// find returns every position in [lo, hi-len(pat)] where pat matches, in
// file order. It looks up the pattern's rarest line in the index, so a
// search costs about as much as the number of places that line occurs.
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

// sameText reports whether two contents have the same lines, terminators
// aside.
func sameText(a, b *content) bool {
	if a.n() != b.n() {
		return false
	}
	for i := range a.n() {
		if a.line(i) != b.line(i) {
			return false
		}
	}
	return true
}

// headingAbove is the line git would name in a hunk header starting at
// at: the nearest line above that starts with a letter, "_" or "$".
func (c *content) headingAbove(at int) string {
	if c.heading == nil {
		// heading[i]: the last heading line before line i, or -1.
		c.heading = make([]int32, c.n()+1)
		last := int32(-1)
		for i := range c.n() {
			l := c.line(i)
			c.heading[i] = last
			if l != "" && (isLetter(l[0]) || l[0] == '_' || l[0] == '$') {
				last = int32(i)
			}
		}
		c.heading[c.n()] = last
	}
	if i := c.heading[min(max(at, 0), c.n())]; i >= 0 {
		return strings.TrimSpace(c.line(int(i)))
	}
	return ""
}

package patch

import (
	"math"
	"strings"
	"unsafe"
)

// diffLines is a diff's text cut into lines: where each line ends, not a
// string per line. A 10 MB diff has 450,000 lines; as strings they were a
// 7 MB array of pointers, memory to fault in and for the collector to
// scan on every cycle, where these offsets are 1.8 MB that it never looks
// into. A line's text is a piece of src, made when asked for (at).
//
// A line's text has no "\n". When every line ends in CRLF the whole text
// was converted (a Windows clipboard, a chat window), so the CRs are
// dropped too (crlf); otherwise a line keeps its CR, which then belongs to
// that line of the diffed file.
//
// src shares the diff's memory rather than copy it (a 10 MB diff would be
// held twice): Apply's caller does not change it while Apply runs, and
// nothing Apply returns holds a piece of it (paths are cloned, messages
// formatted).
type diffLines struct {
	src string
	// end[i]: where line i's text ends, before its "\n" (and its "\r"
	// when crlf). Line i+1 starts just past that terminator, so a line is
	// two loads and no look at its bytes: the scanner reads each line
	// several times.
	end  []uint32
	crlf bool
	// origin, when not nil, selects lines of the text (see selectDiff):
	// line i is the text's line origin[i], 1-based.
	origin []int
}

// splitDiffLines cuts b into lines. b must fit in 32-bit offsets; Apply's
// read limit (readlimit.Diff) keeps diffs far below 4 GiB, and a larger
// text is refused here rather than misread.
func splitDiffLines(b []byte) (*diffLines, error) {
	s := unsafe.String(unsafe.SliceData(b), len(b))
	if uint64(len(s)) > math.MaxUint32-2 {
		return nil, refuse(BadDiff, "the diff is %d bytes, over the 4 GiB that can be read", len(s))
	}
	// One pass that cuts and sees whether every line ends in CRLF. It
	// is not sized by counting the newlines first: a pass over a text
	// larger than the processor's caches costs about as much as the cut
	// itself (strings.Count over the 9.8 MB diff of docs/benchmarks.md was
	// 5% of the whole apply's CPU). The guess, a line per 24 bytes, holds
	// code diffs; when it is short, the rest is guessed from the lines
	// read so far (append's own growth, by a quarter at a time, would
	// allocate five times the result in all).
	d := &diffLines{src: s, end: make([]uint32, 0, len(s)/24+1)}
	nl, crlf := 0, 0
	for at := 0; at < len(s); {
		i := strings.IndexByte(s[at:], '\n')
		if i < 0 {
			d.end = append(d.end, uint32(len(s))) // the last line, without newline
			break
		}
		nl++
		if i > 0 && s[at+i-1] == '\r' {
			crlf++
		}
		if len(d.end) == cap(d.end) {
			more := (len(s)-at)/(at/len(d.end)+1)*9/8 + 16
			d.end = append(make([]uint32, 0, len(d.end)+more), d.end...)
		}
		at += i + 1
		d.end = append(d.end, uint32(at-1))
	}
	d.crlf = len(s) > 0 && crlf == nl
	if d.crlf {
		// Every "\n" has a "\r" before it: the text ends before both.
		for i := range d.end[:nl] {
			d.end[i]--
		}
		if len(d.end) > nl && strings.HasSuffix(s, "\r") {
			d.end[nl]-- // the last line, without newline, loses its CR too
		}
	}
	return d, nil
}

// n is the number of lines.
func (d *diffLines) n() int {
	if d.origin != nil {
		return len(d.origin)
	}
	return len(d.end)
}

// at is line i's text.
func (d *diffLines) at(i int) string {
	if d.origin != nil {
		i = d.origin[i] - 1
	}
	return d.textLine(i)
}

// textLine is line i of the whole text, whatever is selected.
func (d *diffLines) textLine(i int) string {
	start := 0
	if i > 0 {
		start = int(d.end[i-1]) + 1
		if d.crlf {
			start++
		}
	}
	return d.src[start:d.end[i]]
}

// strings is every selected line as a string, for the readers of the
// other edit formats, which change lines in place.
func (d *diffLines) strings() []string {
	out := make([]string, d.n())
	for i := range out {
		out[i] = d.at(i)
	}
	return out
}

func trimCR(s string) string { return strings.TrimSuffix(s, "\r") }

// fence reports whether l opens or closes a markdown code block, and with
// which character and length. Only a fence at the start of a line counts:
// an indented one would be a context line of a diff of a markdown file.
func fence(l string) (ch byte, n int, info string, ok bool) {
	// Every line of a diff is asked, and almost none starts a fence: the
	// first byte decides without trimming (TrimRight with a cutset was
	// 2.6% of a 9.8 MB apply's CPU). Trimming the end cannot change it.
	if len(l) < 3 || (l[0] != '`' && l[0] != '~') {
		return 0, 0, "", false
	}
	l = strings.TrimRight(l, " \t\r")
	if len(l) < 3 {
		return 0, 0, "", false
	}
	ch = l[0]
	for n < len(l) && l[n] == ch {
		n++
	}
	if n < 3 {
		return 0, 0, "", false
	}
	return ch, n, strings.TrimSpace(l[n:]), true
}

// selectDiff returns the lines that hold the diff. When the text has
// markdown code blocks that look like a diff, their contents are the diff
// (a model may split one diff over several blocks); otherwise the whole
// text is, and the scanner skips any prose around it.
//
// The selection's origin gives each selected line's 1-based line in the
// text (nil when the whole text is selected), and closed tells whether
// the selection ends at a closing fence: then the answer went on past the
// diff, so the diff was not cut off inside its last hunk.
func selectDiff(d *diffLines) (sel *diffLines, closed bool) {
	origin, closed, found := selectFenced(d.n(), d.at)
	if !found {
		return d, false
	}
	sel = &diffLines{src: d.src, end: d.end, crlf: d.crlf, origin: origin}
	return sel, closed
}

// selectDiffStrings is selectDiff for lines held as strings.
func selectDiffStrings(lines []string) []string {
	origin, _, found := selectFenced(len(lines), func(i int) string { return lines[i] })
	if !found {
		return lines
	}
	out := make([]string, len(origin))
	for i, o := range origin {
		out[i] = lines[o-1]
	}
	return out
}

// selectFenced finds the fenced blocks that look like a diff among n
// lines (line i is at(i)): origin lists their lines, 1-based; found is
// false when there are none.
func selectFenced(n int, at func(int) string) (origin []int, closed, found bool) {
	for i := 0; i < n; i++ {
		ch, fn, _, ok := fence(at(i))
		if !ok {
			continue
		}
		// Find the closing fence: same character, at least as long, no info.
		end := n
		for j := i + 1; j < n; j++ {
			if c2, n2, info, ok := fence(at(j)); ok && c2 == ch && n2 >= fn && info == "" {
				end = j
				break
			}
		}
		if looksLikeDiffAt(i+1, end, at) {
			found = true
			for x := i + 1; x < end; x++ {
				origin = append(origin, x+1)
			}
			closed = end < n
		}
		i = end
	}
	return origin, closed, found
}

func looksLikeDiff(lines []string) bool {
	return looksLikeDiffAt(0, len(lines), func(i int) string { return lines[i] })
}

// looksLikeDiffAt reports whether lines [from, to) hold a diff's header.
func looksLikeDiffAt(from, to int, at func(int) string) bool {
	for i := from; i < to; i++ {
		l := trimCR(at(i))
		if strings.HasPrefix(l, "@@") || strings.HasPrefix(l, "diff --git ") {
			return true
		}
		if strings.HasPrefix(l, "--- ") && i+1 < to && strings.HasPrefix(at(i+1), "+++ ") {
			return true
		}
	}
	return false
}

package patch

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// The scanner is the tolerant half of parsing. It finds file headers and
// hunks in text that may hold prose, decides where each hunk really ends
// (from its body, not from the counts in its header, which models get
// wrong), repairs context lines that lost their leading space, and emits a
// canonical diff that go-diff reads without surprises.

// section is one file of the diff as the scanner found it.
type section struct {
	line             int      // line of its first header in the answer, 1-based
	at               int      // index of that line among the selected lines
	ext              []string // git extended headers (new file mode, rename from...)
	oldName, newName string   // as written after "--- " and "+++ ", cut at a tab
	hunks            []*scanHunk
	headerOnly       bool // git's headers and no hunks: a mode change, an empty file
}

type scanHunk struct {
	line               int    // line of the "@@" header, 1-based
	header             string // the header as written
	hasHint            bool   // the header had line numbers
	oldStart, newStart int
	// The canonical body: a marker is `\`. A hunk written as it should be
	// (most are) is lines [from, to) of the diff, read where they are;
	// another is repaired into fixed.
	lines      *diffLines
	from, to   int
	fixed      []string
	nOld, nNew int // counted from the body
	cutAt      int // see hunk.cutAt
}

// bodyLen is the number of lines in h's body.
func (h *scanHunk) bodyLen() int {
	if h.fixed != nil {
		return len(h.fixed)
	}
	return h.to - h.from
}

// bodyAt is line x of h's body.
func (h *scanHunk) bodyAt(x int) string {
	if h.fixed != nil {
		return h.fixed[x]
	}
	return h.lines.at(h.from + x)
}

type scanner struct {
	lines    *diffLines
	maxHunks int
	nhunks   int
	notes    []string
	slab     []scanHunk // see hunk

	// What the end of the text says (see selectDiff): closed: a closing
	// fence ends the selection; endNL: the text ends with a newline.
	// ended: its writer says it is whole (Options.Ended).
	closed, endNL, ended bool
}

// scan reads every file section. lines come from selectDiff; closed and
// endNL are what selectDiff and the text say about its end.
func scan(ctx context.Context, lines *diffLines, closed, endNL, ended bool, maxHunks int) ([]*section, []string, error) {
	s := &scanner{lines: lines, maxHunks: maxHunks, closed: closed, endNL: endNL, ended: ended}
	var secs []*section
	var cur *section
	consumed := 0 // the line after the last header or hunk read
	for i, polled := 0, 0; i < lines.n(); {
		if i-polled >= 1<<14 {
			polled = i
			if ctx.Err() != nil {
				return nil, nil, stopped(ctx, "while reading the diff")
			}
		}
		l := trimCR(lines.at(i))
		switch {
		case strings.HasPrefix(l, "diff --git "):
			sec := &section{line: s.orig(i), at: i}
			i++
			for i < lines.n() && isExtHeader(trimCR(lines.at(i))) {
				sec.ext = append(sec.ext, trimCR(lines.at(i)))
				i++
			}
			if !s.fileHeaderAt(i) {
				if s.endsAt(i) || s.headerCut(i) {
					if err := s.cutHeader(sec, l); err != nil {
						return nil, nil, err
					}
				}
				// A mode change, or a new or deleted empty file: git
				// writes no "---"/"+++" lines, the names are on the
				// "diff --git" line.
				if headerOnly(sec.ext) {
					a, b, ok := gitNames(strings.TrimPrefix(l, "diff --git "))
					if !ok {
						return nil, nil, refuse(BadDiff, "line %d: cannot read the file names of %q", sec.line, l)
					}
					sec.oldName, sec.newName, sec.headerOnly = a, b, true
					for _, x := range sec.ext {
						switch {
						case strings.HasPrefix(x, "new file mode "):
							sec.oldName = devNull
						case strings.HasPrefix(x, "deleted file mode "):
							sec.newName = devNull
						}
					}
					secs = append(secs, sec)
					cur = nil
					consumed = i
					continue
				}
				return nil, nil, refuse(BadDiff, "line %d: %q has no \"---\" and \"+++\" lines after it, so it is a rename, a copy or a binary file; only changes to text written as hunks, mode changes and new or deleted empty files are supported", sec.line, l)
			}
			sec.oldName, sec.newName = headerName(lines.at(i)[4:]), headerName(lines.at(i + 1)[4:])
			i += 2
			secs = append(secs, sec)
			cur = sec
			consumed = i
		case s.fileHeaderAt(i):
			cur = &section{line: s.orig(i), at: i, oldName: headerName(l[4:]), newName: headerName(trimCR(lines.at(i + 1))[4:])}
			secs = append(secs, cur)
			i += 2
			consumed = i
		case strings.HasPrefix(l, "@@"):
			if cur == nil {
				return nil, nil, refuse(BadDiff, "line %d: hunk %q comes before any file header; start each file's changes with \"--- a/PATH\" and \"+++ b/PATH\" lines", s.orig(i), l)
			}
			h, next, err := s.hunk(i, cur)
			if err != nil {
				return nil, nil, err
			}
			cur.hunks = append(cur.hunks, h)
			i = next
			consumed = i
		case strings.HasPrefix(l, "Binary files ") || l == "GIT binary patch":
			return nil, nil, refuse(BadDiff, "line %d: binary diffs are not supported", s.orig(i))
		default:
			i++ // prose between or around the diff
		}
	}
	if err := s.cutTail(consumed); err != nil {
		return nil, nil, err
	}
	for _, sec := range secs {
		if len(sec.hunks) == 0 && !sec.headerOnly {
			if sec == secs[len(secs)-1] && s.endsAt(consumed) {
				return nil, nil, s.cutOff("after the file header of %s (line %d), which has no hunks", sec.newName, sec.line)
			}
			return nil, nil, refuse(BadDiff, "line %d: the file header for %s has no hunks (\"@@ ... @@\" followed by lines)", sec.line, sec.newName)
		}
		if sec.oldName == "" || sec.newName == "" {
			return nil, nil, refuse(BadDiff, "line %d: a file header has no file name", sec.line)
		}
	}
	return secs, s.notes, nil
}

func (s *scanner) fileHeaderAt(i int) bool {
	return i+1 < s.lines.n() && strings.HasPrefix(trimCR(s.lines.at(i)), "--- ") &&
		strings.HasPrefix(trimCR(s.lines.at(i+1)), "+++ ")
}

var extHeaders = []string{"old mode ", "new mode ", "deleted file mode ", "new file mode ",
	"copy from ", "copy to ", "rename from ", "rename to ", "similarity index ",
	"dissimilarity index ", "index "}

func isExtHeader(l string) bool {
	for _, p := range extHeaders {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// headerName is the file name of a "---" or "+++" line: up to a tab (what
// follows is a timestamp), without surrounding blanks.
func headerName(s string) string {
	s = trimCR(s)
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// Classes of hunk body lines.
const (
	clBlank = 'b' // an empty line: a blank context line that lost its space
	clBare  = 'x' // text with no prefix: lost context, or prose
)

func class(l string) byte {
	if l == "" {
		return clBlank
	}
	switch l[0] {
	case ' ', '-', '+':
		return l[0]
	case '\\':
		// "\ No newline at end of file", in any language. A bare line
		// that merely starts with a backslash is not a marker.
		if strings.HasPrefix(l, "\\ ") {
			return '\\'
		}
	}
	return clBare
}

// isDiffLine: a line that can only be part of a hunk.
func isDiffLine(c byte) bool { return c == ' ' || c == '-' || c == '+' || c == '\\' }

// hunk scans the hunk whose header is at line i and returns the index of
// the first line after it.
func (s *scanner) hunk(i int, sec *section) (*scanHunk, int, error) {
	s.nhunks++
	if s.nhunks > s.maxHunks {
		return nil, 0, refuse(BadDiff, "the diff has more than %d hunks, the limit", s.maxHunks)
	}
	lines := s.lines
	hdr := trimCR(lines.at(i))
	if strings.HasPrefix(hdr, "@@@") {
		return nil, 0, refuse(BadDiff, "line %d: combined (merge) diffs are not supported", s.orig(i))
	}
	// Hunks are made 256 at a time: one small allocation each was a
	// visible share of the scan on a diff of 24,000 hunks.
	if len(s.slab) == 0 {
		s.slab = make([]scanHunk, 256)
	}
	h := &s.slab[0]
	s.slab = s.slab[1:]
	*h = scanHunk{line: s.orig(i), header: hdr}
	oldCount, newCount, counts := 0, 0, false
	h.oldStart, oldCount, h.newStart, newCount, counts = parseRange(hdr)
	h.hasHint = counts || h.oldStart > 0 || h.newStart > 0

	// k: the first line that cannot belong to this hunk.
	j := i + 1
	k := j
	old := 0
	for ; k < lines.n(); k++ {
		t := trimCR(lines.at(k))
		if strings.HasPrefix(t, "@@") || strings.HasPrefix(t, "diff --git ") || strings.HasPrefix(t, "Index: ") {
			break
		}
		if _, _, _, ok := fence(t); ok {
			break
		}
		if s.fileHeaderAt(k) {
			// A removed line starting with "-- " followed by an added one
			// starting with "++ " looks like a file header. Believe the
			// counts when they say the hunk goes on and no hunk follows.
			next := k+2 < lines.n() && strings.HasPrefix(lines.at(k+2), "@@")
			if !counts || old >= oldCount || next {
				break
			}
		}
		if c := class(t); c != '+' && c != '\\' {
			old++
		}
	}

	// e: where the hunk ends. Counts that add up exactly, followed by
	// nothing that looks like more of the hunk, are believed; otherwise
	// the hunk runs to its last line that has a diff prefix, and the
	// blank or bare lines after that are taken as prose.
	e := -1
	if counts {
		e = countedEnd(lines, j, k, oldCount, newCount)
	}
	if e < 0 {
		e = j
		for x := j; x < k; x++ {
			if isDiffLine(class(trimCR(lines.at(x)))) {
				e = x + 1
			}
		}
	}

	repaired := 0
	// Most hunks are written as they should be: every line has its
	// prefix, no marker. Their body is then the diff's own lines, read
	// where they are (bodies are never changed), not copied.
	plain := true
	for x := j; x < e && plain; x++ {
		c := class(trimCR(lines.at(x)))
		plain = c == ' ' || c == '-' || c == '+'
	}
	h.lines, h.from, h.to = lines, j, e
	if !plain {
		h.fixed = make([]string, 0, e-j)
	}
	for x := j; x < e && !plain; x++ {
		raw := lines.at(x)
		switch c := class(trimCR(raw)); c {
		case ' ', '-', '+':
			h.fixed = append(h.fixed, raw)
		case '\\':
			h.fixed = append(h.fixed, `\`)
		case clBlank:
			h.fixed = append(h.fixed, " "+raw)
		default:
			h.fixed = append(h.fixed, " "+raw)
			repaired++
		}
	}
	if repaired > 0 {
		s.notes = append(s.notes, fmt.Sprintf("line %d: %d line(s) of the hunk had no leading space and were read as context", h.line, repaired))
	}
	changes := 0
	for x := range h.bodyLen() {
		switch h.bodyAt(x)[0] {
		case ' ':
			h.nOld++
			h.nNew++
		case '-':
			h.nOld++
			changes++
		case '+':
			h.nNew++
			changes++
		}
	}
	if k == lines.n() && !s.closed {
		// The hunk runs to the end of the answer: see that it is whole.
		if err := s.lastHunk(h, sec, e, counts, oldCount, newCount); err != nil {
			return nil, 0, err
		}
	}
	if changes == 0 {
		return nil, 0, refuse(BadDiff, "line %d: hunk %q has no lines starting with \"-\" or \"+\"", h.line, hdr)
	}
	if err := checkMarkers(h); err != nil {
		return nil, 0, err
	}
	if counts && (h.nOld != oldCount || h.nNew != newCount) {
		s.notes = append(s.notes, fmt.Sprintf("line %d: hunk header says -%d +%d lines, the body has -%d +%d; used the body", h.line, oldCount, newCount, h.nOld, h.nNew))
	}
	return h, e, nil
}

// countedEnd returns the line after the hunk if the header's counts are
// met exactly and nothing after that point looks like more of the hunk;
// else -1. Blank and bare lines count as context, as they would if the
// counts are right.
func countedEnd(lines *diffLines, j, k, oldCount, newCount int) int {
	o, n := 0, 0
	end := -1
	if oldCount == 0 && newCount == 0 {
		end = j
	}
	for x := j; x < k && end < 0; x++ {
		switch class(trimCR(lines.at(x))) {
		case '-':
			o++
		case '+':
			n++
		case '\\':
		default:
			o++
			n++
		}
		if o > oldCount || n > newCount {
			return -1
		}
		if o == oldCount && n == newCount {
			end = x + 1
		}
	}
	if end < 0 {
		return -1
	}
	for end < k && class(trimCR(lines.at(end))) == '\\' {
		end++
	}
	for x := end; x < k; x++ {
		if isDiffLine(class(trimCR(lines.at(x)))) {
			return -1
		}
	}
	return end
}

// checkMarkers makes sure each "\ No newline at end of file" follows the
// last line of a side: after a removed line only added lines may follow,
// after an added or context line nothing may.
func checkMarkers(h *scanHunk) error {
	n := h.bodyLen()
	for x := range n {
		if h.bodyAt(x) != `\` {
			continue
		}
		bad := x == 0 || h.bodyAt(x-1) == `\`
		if !bad {
			switch h.bodyAt(x - 1)[0] {
			case '-':
				for y := x + 1; y < n; y++ {
					if r := h.bodyAt(y); r != `\` && r[0] != '+' {
						bad = true
					}
				}
			default:
				bad = x != n-1
			}
		}
		if bad {
			return refuse(BadDiff, "hunk at line %d: \"\\ No newline at end of file\" must follow the last line of the file, not a line in the middle", h.line)
		}
	}
	return nil
}

// parseRange reads "@@ -a,b +c,d @@". Headers without numbers ("@@ ... @@",
// "@@ @@") give zeros and counts=false.
func parseRange(hdr string) (oldStart, oldCount, newStart, newCount int, counts bool) {
	s := strings.TrimPrefix(hdr, "@@")
	if i := strings.Index(s, "@@"); i >= 0 {
		s = s[:i]
	}
	f0, f1, two := twoFields(s)
	if !two || !strings.HasPrefix(f0, "-") || !strings.HasPrefix(f1, "+") {
		return 0, 0, 0, 0, false
	}
	os, oc, ok1 := parseSpan(f0[1:])
	ns, nc, ok2 := parseSpan(f1[1:])
	if !ok1 || !ok2 {
		return 0, 0, 0, 0, false
	}
	return os, oc, ns, nc, true
}

// twoFields splits s as strings.Fields would, without allocating, and
// reports whether it has exactly two fields.
func twoFields(s string) (a, b string, ok bool) {
	var f [2]string
	n := 0
	for {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			break
		}
		i := strings.IndexFunc(s, unicode.IsSpace)
		if i < 0 {
			i = len(s)
		}
		if n == len(f) {
			return "", "", false
		}
		f[n], s = s[:i], s[i:]
		n++
	}
	return f[0], f[1], n == len(f)
}

func parseSpan(s string) (start, count int, ok bool) {
	a, b, comma := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	if err != nil || start < 0 || start > 1<<30 {
		return 0, 0, false
	}
	count = 1
	if comma {
		count, err = strconv.Atoi(b)
		if err != nil || count < 0 || count > 1<<30 {
			return 0, 0, false
		}
	}
	return start, count, true
}

// canonical writes the sections as a plain unified diff, with counts that
// match the bodies.
func canonical(secs []*section) []byte {
	var b strings.Builder
	for _, sec := range secs {
		fmt.Fprintf(&b, "--- %s\n+++ %s\n", sec.oldName, sec.newName)
		for _, h := range sec.hunks {
			fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", h.oldStart, h.nOld, h.newStart, h.nNew)
			for x := range h.bodyLen() {
				l := h.bodyAt(x)
				if l == `\` {
					l = `\ No newline at end of file`
				}
				b.WriteString(l)
				b.WriteByte('\n')
			}
		}
	}
	return []byte(b.String())
}

// headerOnly reports whether git's extended headers describe a change with
// no hunks that we can make: a mode change, or a new or deleted empty
// file (not a rename or copy, which carry their own headers).
func headerOnly(ext []string) bool {
	ok := false
	for _, x := range ext {
		switch {
		case strings.HasPrefix(x, "rename ") || strings.HasPrefix(x, "copy "):
			return false
		case strings.HasPrefix(x, "old mode ") || strings.HasPrefix(x, "new mode ") ||
			strings.HasPrefix(x, "new file mode ") || strings.HasPrefix(x, "deleted file mode "):
			ok = true
		}
	}
	return ok
}

// gitNames reads the two names of a "diff --git" line: quoted as git
// quotes names with unusual characters, or plain, in which case both
// names are the same file (git writes that line for one path) and the
// line is split where its two halves agree past their a/ b/ prefixes.
func gitNames(s string) (a, b string, ok bool) {
	s = trimCR(s)
	if strings.HasPrefix(s, `"`) {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return "", "", false
		}
		a, _ = strconv.Unquote(q)
		rest := strings.TrimPrefix(s[len(q):], " ")
		if strings.HasPrefix(rest, `"`) {
			b, err = strconv.Unquote(rest)
			return a, b, err == nil
		}
		return a, rest, rest != ""
	}
	if i := strings.Index(s, ` "`); i >= 0 {
		b, err := strconv.Unquote(s[i+1:])
		return s[:i], b, err == nil
	}
	if len(s)%2 == 1 && s[len(s)/2] == ' ' {
		a, b = s[:len(s)/2], s[len(s)/2+1:]
		if dropFirst(a) == dropFirst(b) {
			return a, b, true
		}
	}
	return "", "", false
}

// dropFirst drops one leading path component (git's a/ or b/).
func dropFirst(name string) string {
	if _, rest, ok := strings.Cut(name, "/"); ok {
		return rest
	}
	return name
}

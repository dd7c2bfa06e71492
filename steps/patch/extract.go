package patch

import (
	"strings"
	"unsafe"
)

// splitDiffLines splits a diff into lines without their "\n". When every
// line ends in CRLF the whole text was converted (a Windows clipboard, a
// chat window), so the CRs are dropped; otherwise a line keeps its CR, which
// then belongs to that line of the diffed file.
//
// The lines share b's memory rather than copy it (a 10 MB diff would be
// held twice): Apply's caller does not change b while Apply runs, and
// nothing Apply returns holds a piece of it (paths are cloned, messages
// formatted).
func splitDiffLines(b []byte) []string {
	s := unsafe.String(unsafe.SliceData(b), len(b))
	// One pass to size the result and see whether every line ends in
	// CRLF, one to cut (strings.SplitAfter and then trimming each line
	// wrote every line's header twice).
	nl := strings.Count(s, "\n")
	allCRLF := len(s) > 0 && strings.Count(s, "\r\n") == nl
	lines := make([]string, 0, nl+1)
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			if allCRLF {
				s = strings.TrimSuffix(s, "\r")
			}
			lines = append(lines, s) // the last line, without newline
			break
		}
		l := s[:i]
		if allCRLF {
			l = l[:len(l)-1]
		}
		lines = append(lines, l)
		s = s[i+1:]
	}
	return lines
}

func trimCR(s string) string { return strings.TrimSuffix(s, "\r") }

// fence reports whether l opens or closes a markdown code block, and with
// which character and length. Only a fence at the start of a line counts:
// an indented one would be a context line of a diff of a markdown file.
func fence(l string) (ch byte, n int, info string, ok bool) {
	l = strings.TrimRight(l, " \t\r")
	if len(l) < 3 || (l[0] != '`' && l[0] != '~') {
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
// origin gives each selected line's 1-based line in the text (nil when
// the whole text is selected), and closed
// tells whether the selection ends at a closing fence: then the answer
// went on past the diff, so the diff was not cut off inside its last hunk.
func selectDiff(lines []string) (out []string, origin []int, closed bool) {
	found := false
	for i := 0; i < len(lines); i++ {
		ch, n, _, ok := fence(lines[i])
		if !ok {
			continue
		}
		// Find the closing fence: same character, at least as long, no info.
		end := len(lines)
		for j := i + 1; j < len(lines); j++ {
			if c2, n2, info, ok := fence(lines[j]); ok && c2 == ch && n2 >= n && info == "" {
				end = j
				break
			}
		}
		block := lines[i+1 : end]
		if looksLikeDiff(block) {
			found = true
			out = append(out, block...)
			for x := range block {
				origin = append(origin, i+2+x)
			}
			closed = end < len(lines)
		}
		i = end
	}
	if !found {
		return lines, nil, false // nil: each line is where it was
	}
	return out, origin, closed
}

func looksLikeDiff(lines []string) bool {
	for i, l := range lines {
		l = trimCR(l)
		if strings.HasPrefix(l, "@@") || strings.HasPrefix(l, "diff --git ") {
			return true
		}
		if strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ") {
			return true
		}
	}
	return false
}

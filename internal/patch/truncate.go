package patch

import (
	"fmt"
	"strings"
)

// A model's answer cut off at its token limit still looks like a diff:
// the last hunk is short of what its header promises, the last line may
// stop in the middle, or the text ends in the next file's header. Applying
// what is there writes half a change (or half a line) and reports
// success, so the scanner refuses these with a message saying where the
// answer stopped. Hunks that are followed by a header, and a last hunk
// followed by a closing fence, were ended by the writer: only there may
// the body overrule the header's counts (models miscount). The writer's
// own word does the same for the last hunk (Options.Ended: a provider
// that reported a normal finish); a file read by `runner apply` has none.

// endsAt reports whether the answer ends at line i: nothing but blank
// lines from there on, and no closing fence after them.
func (s *scanner) endsAt(i int) bool {
	if s.closed {
		return false
	}
	for x := i; x < s.lines.n(); x++ {
		if strings.TrimSpace(s.lines.at(x)) != "" {
			return false
		}
	}
	return true
}

// orig is line x's 1-based number in the answer as written.
func (s *scanner) orig(x int) int {
	if s.lines.origin == nil || x < 0 || x >= len(s.lines.origin) {
		return x + 1
	}
	return s.lines.origin[x]
}

// lastText is the index of the last line that is not blank.
func (s *scanner) lastText() int {
	for x := s.lines.n() - 1; x >= 0; x-- {
		if strings.TrimSpace(s.lines.at(x)) != "" {
			return x
		}
	}
	return 0
}

// cutOff is the refusal for an answer that stopped early.
func (s *scanner) cutOff(format string, args ...any) *RefusedError {
	err := refuse(BadDiff, "the diff ends "+format+": your answer was cut off after line %d of it; send the whole diff again",
		append(args, s.orig(s.lastText()))...)
	err.Truncated = true
	return err
}

// lastHunk checks the hunk that runs to the end of the answer (its body
// ends at line e, exclusive). Its header's counts must be met exactly and
// its last line must be whole: nothing after it shows that the writer
// finished it.
func (s *scanner) lastHunk(h *scanHunk, sec *section, e int, counts bool, oldCount, newCount int) error {
	where := fmt.Sprintf("inside hunk %d of %s (line %d, %q)", len(sec.hunks)+1, sec.newName, h.line, h.header)
	last := s.lines.n() - 1
	if !s.endNL && e-1 == last {
		// A context line is whole if the file has it where the hunk
		// goes (the placer checks; a text whose trailing newline was
		// trimmed ends so); a changed line cannot be checked.
		c := class(trimCR(s.lines.at(last)))
		if c != '\\' { // a marker's text does not matter
			h.cutAt = s.orig(last)
		}
		if c == '+' || c == '-' {
			err := refuse(BadDiff, "the diff ends in the middle of a line %s: line %d of your answer (%q) has no newline and no \"\\ No newline at end of file\" after it, so your answer was cut off there; send the whole diff again (if that line is whole, end it with a newline)",
				where, s.orig(last), clipLine(trimCR(s.lines.at(last)), 60))
			err.Truncated = true
			return err
		}
	}
	if h.bodyLen() == 0 {
		return s.cutOff("right after the header of hunk %d of %s (line %d, %q)", len(sec.hunks)+1, sec.newName, h.line, h.header)
	}
	if s.ended {
		// The writer's word that the answer is whole does what a closing
		// fence does: the body is the hunk, whatever its header counts.
		return nil
	}
	if !counts {
		err := refuse(BadDiff, "hunk %d of %s (line %d, %q) ends the diff, and its header gives no line counts, so a whole hunk cannot be told from an answer cut off: give the header its counts, \"@@ -START,%d +START,%d @@\" with START the line the hunk starts at, or end the diff with a closing ``` line",
			len(sec.hunks)+1, sec.newName, h.line, h.header, h.nOld, h.nNew)
		err.Truncated = true
		return err
	}
	if h.nOld < oldCount || h.nNew < newCount {
		return s.cutOff("%s, which promises %d old and %d new lines but has %d and %d", where, oldCount, newCount, h.nOld, h.nNew)
	}
	if h.nOld != oldCount || h.nNew != newCount {
		err := refuse(BadDiff, "hunk %d of %s (line %d, %q) ends the diff with more lines than its header says (%d old and %d new promised, %d and %d written): a miscounted header cannot be told from an answer cut off. If the hunk is whole, correct its header to \"@@ -%d,%d +%d,%d @@\"; otherwise send the whole diff again",
			len(sec.hunks)+1, sec.newName, h.line, h.header, oldCount, newCount, h.nOld, h.nNew, h.oldStart, h.nOld, h.newStart, h.nNew)
		err.Truncated = true
		return err
	}
	return nil
}

// headerWords start the lines of a file's header (and a hunk's).
var headerWords = append([]string{"diff --git ", "Index: ", "--- ", "+++ ", "@@"}, extHeaders...)

// cutTail refuses an answer that ends in the start of another file's
// header, after the last hunk or header read (which ends at line from):
// a cut inside "diff --git a/x b/x", or after an "Index:" or a lone
// "--- a/x" line. The answer's last line, when it has no newline, is cut
// if it could be the start of such a line or of a "\ No newline" marker.
func (s *scanner) cutTail(from int) error {
	if s.closed {
		return nil
	}
	for x := from; x < s.lines.n(); x++ {
		t := trimCR(s.lines.at(x))
		partial := x == s.lines.n()-1 && !s.endNL && strings.TrimSpace(t) != ""
		for _, w := range headerWords {
			if strings.HasPrefix(t, w) || (partial && strings.HasPrefix(w, t)) {
				return s.cutOff("with the start of another file's header (line %d, %q)", s.orig(x), clipLine(t, 60))
			}
		}
		if partial && strings.HasPrefix(t, `\`) {
			return s.cutOff("in the middle of a \"\\ No newline at end of file\" line (line %d)", s.orig(x))
		}
	}
	return nil
}

// headerCut reports whether the answer ends at line i in the rest of a
// file header ("index", "---", "+++"), cut short.
func (s *scanner) headerCut(i int) bool {
	like := func(t, w string) bool { return strings.HasPrefix(t, w) || strings.HasPrefix(w, t) }
	var rest []string
	for x := i; x < s.lines.n(); x++ {
		if t := trimCR(s.lines.at(x)); strings.TrimSpace(t) != "" {
			rest = append(rest, t)
		}
	}
	switch {
	case s.closed || len(rest) == 0 || len(rest) > 2 || !s.endsAt(i+len(rest)):
		return false
	case len(rest) == 1:
		for _, w := range headerWords {
			if like(rest[0], w) {
				return true
			}
		}
		return false
	}
	return strings.HasPrefix(rest[0], "--- ") && like(rest[1], "+++ ")
}

// cutHeader refuses a "diff --git" header that ends the answer before
// its hunks: without "---"/"+++" lines where a change to the text needs
// them, or with an index line that says the file has content (a new or
// deleted empty file has none: git's empty blob is e69de29).
func (s *scanner) cutHeader(sec *section, l string) error {
	for _, x := range sec.ext {
		if strings.HasPrefix(x, "rename ") || strings.HasPrefix(x, "copy ") || strings.HasPrefix(x, "similarity ") {
			return nil // whole as it is, and refused as a rename or copy
		}
	}
	what := fmt.Sprintf("after the header of a file (line %d, %q)", sec.line, clipLine(l, 60))
	if !headerOnly(sec.ext) || s.headerCut(sec.at+1+len(sec.ext)) {
		return s.cutOff("%s, before its \"---\" and \"+++\" lines", what)
	}
	created, deleted := false, false
	var index string
	for _, x := range sec.ext {
		switch {
		case strings.HasPrefix(x, "new file mode "):
			created = true
		case strings.HasPrefix(x, "deleted file mode "):
			deleted = true
		case strings.HasPrefix(x, "index "):
			index = x
		}
	}
	if index == "" {
		return nil
	}
	hashes := strings.Fields(strings.TrimPrefix(index, "index "))
	if len(hashes) == 0 {
		return nil
	}
	from, to, ok := strings.Cut(hashes[0], "..")
	if !ok {
		return nil
	}
	content := from != to
	switch {
	case created:
		content = !emptyBlob(to)
	case deleted:
		content = !emptyBlob(from)
	}
	if content {
		return s.cutOff("%s, whose index line (%q) says the file has content, before its hunks", what, index)
	}
	return nil
}

// emptyBlob reports whether an abbreviated hash names git's empty blob
// (or no blob).
func emptyBlob(h string) bool {
	return strings.Trim(h, "0") == "" || (len(h) >= 7 && strings.HasPrefix("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", h))
}

// clipLine shortens a quoted line of the diff to n bytes.
func clipLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// cutShort refuses a hunk whose last line, the answer's last and without
// a newline, is not matched in the file: fuzz dropped it, or the hunk did
// not place. That line was cut short, so the answer was cut off; a whole
// one matches (the newline alone was lost, as when an answer is trimmed).
func cutShort(path string, pls []placed, fails []failure) error {
	var h *hunk
	for i := range pls {
		if pl := &pls[i]; pl.h.cutAt != 0 && (len(pl.ops) == 0 || pl.top+len(pl.ops) < len(pl.h.ops)) {
			h = pl.h
		}
	}
	for i := range fails {
		if fails[i].h.cutAt != 0 {
			h = fails[i].h
		}
	}
	if h == nil {
		return nil
	}
	err := refuse(BadDiff, "the diff ends in the middle of a line: line %d of your answer, the last line of hunk %d of %s, has no newline and is not a whole line of the file, so your answer was cut off there; send the whole diff again",
		h.cutAt, h.num, path)
	err.Truncated = true
	return err
}

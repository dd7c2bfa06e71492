package patch

import (
	"slices"
	"strings"
)

// The apply_patch envelope OpenAI's models are trained on:
//
//	*** Begin Patch
//	*** Update File: path/to/file.py
//	@@ class Foo:
//	 context
//	-old line
//	+new line
//	*** Add File: path/to/new.py
//	+its lines
//	*** Delete File: path/to/old.py
//	*** End Patch
//
// An Update section's hunks are unified hunks without line numbers (the
// "@@" line may name the function or class they are in, which breaks ties
// as git's heading does); Add File is a created file; Delete File deletes
// the file whatever it holds. "*** Move to:" (a rename) is refused, as the
// unified applier refuses renames. An envelope without "*** End Patch"
// was cut off and is refused.

const (
	apBegin  = "*** Begin Patch"
	apEnd    = "*** End Patch"
	apUpdate = "*** Update File:"
	apAdd    = "*** Add File:"
	apDelete = "*** Delete File:"
	apMove   = "*** Move to:"
	apEOF    = "*** End of File"
)

// parseApplyPatch reads every envelope of lines not yet used, marking
// the lines it reads.
func parseApplyPatch(lines []string, used []bool) ([]*fileDiff, error) {
	var out []*fileDiff
	for i := 0; i < len(lines); i++ {
		if used[i] || strings.TrimSpace(lines[i]) != apBegin {
			continue
		}
		begin := i
		end := -1
		var f *fileDiff
		var h *hunk
		endHunk := func() {
			if h != nil && len(h.ops) > 0 {
				h.num = len(f.hunks) + 1
				f.hunks = append(f.hunks, h)
			}
			h = nil
		}
		endFile := func() error {
			endHunk()
			if f == nil {
				return nil
			}
			if !f.created && !f.removeAll && len(f.hunks) == 0 {
				return refuse(BadDiff, "line %d: \"*** Update File: %s\" has no hunk: give the lines to change, with \" \" before unchanged lines, \"-\" before removed ones and \"+\" before added ones", f.line, f.newName)
			}
			for _, h := range f.hunks {
				if old, new := h.sides(); !f.created && slices.Equal(old, new) {
					return refuse(BadDiff, "line %d: hunk %d of the patch for %s changes nothing (its \"-\" lines, if any, are the same as its \"+\" lines)", h.line, h.num, f.newName)
				}
			}
			out = append(out, f)
			f = nil
			return nil
		}
		for j := i + 1; j < len(lines) && end < 0; j++ {
			l := lines[j]
			t := strings.TrimRight(l, " \t")
			switch {
			case t == apEnd:
				if err := endFile(); err != nil {
					return nil, err
				}
				end = j
			case t == apBegin:
				return nil, refuse(BadDiff, "line %d: \"*** Begin Patch\" again before the \"*** End Patch\" of the patch begun at line %d", j+1, begin+1)
			case strings.HasPrefix(t, apUpdate), strings.HasPrefix(t, apAdd), strings.HasPrefix(t, apDelete):
				if err := endFile(); err != nil {
					return nil, err
				}
				var name string
				var kind string
				for _, k := range []string{apUpdate, apAdd, apDelete} {
					if n, ok := strings.CutPrefix(t, k); ok {
						name, kind = strings.TrimSpace(n), k
					}
				}
				if name == "" {
					return nil, refuse(BadDiff, "line %d: %q names no file", j+1, t)
				}
				f = literal(j+1, name, FormatApplyPatch)
				switch kind {
				case apAdd:
					f.created, f.oldName = true, devNull
					f.hunks = []*hunk{}
					h = &hunk{line: j + 1, header: apAdd + " " + name, format: FormatApplyPatch}
				case apDelete:
					f.removeAll = true
				}
			case strings.HasPrefix(t, apMove):
				return nil, refuse(BadDiff, "line %d: renames (\"*** Move to:\") are not supported; add the new file with \"*** Add File:\" and remove the old one with \"*** Delete File:\"", j+1)
			case t == apEOF:
				// The hunk reaches the end of the file: a hint only, and
				// the hunk's own lines decide where it goes.
			case f == nil:
				if t != "" {
					return nil, refuse(BadDiff, "line %d: expected \"*** Update File: PATH\", \"*** Add File: PATH\" or \"*** Delete File: PATH\" after \"*** Begin Patch\", got %q", j+1, clipLine(t, 80))
				}
			case f.removeAll:
				if t != "" {
					return nil, refuse(BadDiff, "line %d: \"*** Delete File: %s\" takes no lines after it", j+1, f.newName)
				}
			case f.created:
				if !strings.HasPrefix(l, "+") {
					return nil, refuse(BadDiff, "line %d: every line of \"*** Add File: %s\" starts with \"+\"", j+1, f.newName)
				}
				h.add('+', l[1:], false)
			case strings.HasPrefix(t, "@@"):
				endHunk()
				sec := strings.TrimSpace(strings.TrimPrefix(t, "@@"))
				// git's heading stands after a second "@@": the placer
				// reads it from there.
				h = &hunk{line: j + 1, header: "@@ @@ " + sec, format: FormatApplyPatch, reindent: true}
			default:
				if h == nil {
					h = &hunk{line: j + 1, header: "@@", format: FormatApplyPatch, reindent: true}
				}
				switch {
				case l == "":
					h.add(' ', "", false) // a blank context line, its space lost
				case l[0] == ' ' || l[0] == '-' || l[0] == '+':
					h.add(l[0], l[1:], false)
				default:
					return nil, refuse(BadDiff, "line %d: in \"*** Update File: %s\", every line of a hunk starts with \" \" (unchanged), \"-\" (removed) or \"+\" (added); this one does not: %q", j+1, f.newName, clipLine(l, 80))
				}
			}
		}
		if end < 0 {
			err := refuse(BadDiff, "line %d: the patch begun here has no \"*** End Patch\": the answer was cut off in it; nothing was changed. Send the whole patch again", begin+1)
			err.Truncated = true
			return nil, err
		}
		// A fence right around the envelope is part of it.
		for j := begin; j <= end; j++ {
			used[j] = true
		}
		i = end
	}
	return out, nil
}

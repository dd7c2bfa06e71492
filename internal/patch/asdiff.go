package patch

import (
	"context"
	"fmt"
	"strings"
)

// AsDiff renders edits in any format as one unified diff, for showing
// them (runner report): SEARCH/REPLACE blocks and apply_patch hunks as
// hunks without line numbers, a whole file as all added lines (its old
// content is not in the answer), a deletion as a file going to
// /dev/null. ok is false when the text holds no edit of another format
// than a unified diff (it is shown as it is) or cannot be read.
func AsDiff(text []byte) (diff string, ok bool) {
	fds, _, err := parseEdits(context.Background(), text, FormatAuto, DefaultMaxHunks, false)
	if err != nil {
		return "", false
	}
	other := false
	for _, f := range fds {
		other = other || f.format != ""
	}
	if !other {
		return "", false
	}
	var b strings.Builder
	for _, f := range fds {
		oldName, newName := f.oldName, f.newName
		if f.literal {
			oldName, newName = "a/"+f.oldName, "b/"+f.newName
		}
		if f.created {
			oldName = devNull
		}
		if f.deleted || f.removeAll {
			newName = devNull
		}
		fmt.Fprintf(&b, "--- %s\n+++ %s\n", oldName, newName)
		switch {
		case f.removeAll:
			b.WriteString("@@ the whole file is deleted @@\n")
		case f.whole:
			lines := splitKeep0(string(f.body))
			fmt.Fprintf(&b, "@@ the whole file, %d lines @@\n", len(lines))
			for _, l := range lines {
				b.WriteString("+" + l + "\n")
			}
		}
		for _, h := range f.hunks {
			switch h.format {
			case FormatSearchReplace:
				fmt.Fprintf(&b, "@@ SEARCH/REPLACE block %d @@\n", h.num)
			case FormatApplyPatch:
				fmt.Fprintf(&b, "@@ @@ %s\n", strings.TrimSpace(sectionText(h.header)))
			default:
				b.WriteString(h.header + "\n")
			}
			for _, o := range h.ops {
				b.WriteString(string(o.kind) + h.text(o) + "\n")
			}
		}
	}
	return b.String(), true
}

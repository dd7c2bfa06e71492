package patch

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Models answer with edits in several formats besides the unified diff:
// SEARCH/REPLACE blocks (Aider's "diff" and "diff-fenced" formats),
// OpenAI's apply_patch envelope ("*** Begin Patch") and whole files.
// Each is parsed here into the same fileDiffs the unified parser makes, so
// placing, the all-or-nothing write, backups, undo, path safety and
// staging are the unified applier's, unchanged. What differs is only how
// much the placer may tolerate (see hunk.strict and reindent) and how a
// refusal is worded (see report.go).

// The edit formats Options.Format takes.
const (
	FormatAuto          = "auto"           // any of the others, mixed in one answer
	FormatUnified       = "unified"        // only a unified diff (the default)
	FormatSearchReplace = "search_replace" // <<<<<<< SEARCH / ======= / >>>>>>> REPLACE blocks
	FormatApplyPatch    = "apply_patch"    // *** Begin Patch ... *** End Patch
	FormatWhole         = "whole"          // a file's path, then its whole new content in a ``` block
)

// Formats lists the values of Options.Format, for help texts and schemas.
var Formats = []string{FormatAuto, FormatUnified, FormatSearchReplace, FormatApplyPatch, FormatWhole}

// CheckFormat reports whether f is a format Apply knows ("" is unified).
func CheckFormat(f string) error {
	if f == "" || slices.Contains(Formats, f) {
		return nil
	}
	return fmt.Errorf("unknown edit format %q: use one of %s", f, strings.Join(Formats, ", "))
}

// noEdits is the refusal for an answer holding no edit of the format asked.
func noEdits(format string) *RefusedError {
	switch format {
	case FormatSearchReplace:
		return refuse(BadDiff, "no SEARCH/REPLACE block found: expected the file's path on a line of its own, then \"<<<<<<< SEARCH\", the lines to find, \"=======\", the lines to put instead, \">>>>>>> REPLACE\"")
	case FormatApplyPatch:
		return refuse(BadDiff, "no patch found: expected \"*** Begin Patch\", then \"*** Update File: PATH\" (or Add File, Delete File) with @@ hunks, then \"*** End Patch\"")
	case FormatWhole:
		return refuse(BadDiff, "no whole file found: expected the file's path on a line of its own, then its whole new content in a ``` block")
	}
	return refuse(BadDiff, "no edits found: expected a unified diff (\"--- a/PATH\", \"+++ b/PATH\", @@ hunks), SEARCH/REPLACE blocks (PATH, \"<<<<<<< SEARCH\", \"=======\", \">>>>>>> REPLACE\"), a patch (\"*** Begin Patch\" ... \"*** End Patch\") or a whole file (its path on a line of its own, then a ``` block)")
}

// parseEdits reads the edits in text in the given format (auto: every
// format, mixed). The unified format goes to parseCtx as before.
func parseEdits(ctx context.Context, text []byte, format string, maxHunks int, ended bool) ([]*fileDiff, []string, error) {
	if format == "" || format == FormatUnified {
		return parseCtx(ctx, text, maxHunks, ended)
	}
	if err := CheckFormat(format); err != nil {
		return nil, nil, refuse(BadDiff, "%v", err)
	}
	d, err := splitDiffLines(text)
	if err != nil {
		return nil, nil, err
	}
	lines := d.strings()
	for i, l := range lines {
		lines[i] = trimCR(l)
	}
	used := make([]bool, len(lines)) // lines that belong to an edit already read
	var out []*fileDiff
	add := func(fds []*fileDiff, err error) error {
		out = append(out, fds...)
		return err
	}
	auto := format == FormatAuto
	if auto || format == FormatApplyPatch {
		if err := add(parseApplyPatch(lines, used)); err != nil {
			return nil, nil, err
		}
	}
	if auto || format == FormatSearchReplace {
		if err := add(parseSearchReplace(lines, used)); err != nil {
			return nil, nil, err
		}
	}
	var notes []string
	if auto {
		// What is left may hold a unified diff; the lines read already are
		// blanked, so that line numbers in messages stay the answer's.
		rest := make([]string, len(lines))
		for i, l := range lines {
			if !used[i] {
				rest[i] = l
			}
		}
		if looksLikeDiff(selectDiffStrings(rest)) {
			b := []byte(strings.Join(rest, "\n"))
			if len(text) > 0 && text[len(text)-1] == '\n' {
				b = append(b, '\n')
			}
			fds, n, err := parseCtx(ctx, b, maxHunks, ended)
			if err != nil {
				return nil, nil, err
			}
			out, notes = append(out, fds...), n
		}
	}
	// A code block after a path is a whole file only when asked for, or
	// when nothing else in the answer is an edit: an answer that edits
	// with another format and shows code beside it is explaining, and
	// that code must not replace a file.
	if format == FormatWhole || (auto && len(out) == 0) {
		if err := add(parseWhole(lines, used)); err != nil {
			return nil, nil, err
		}
	}
	if len(out) == 0 {
		return nil, nil, noEdits(format)
	}
	if len(out) > maxHunks {
		return nil, nil, refuse(BadDiff, "the answer has %d edits, over the limit of %d", len(out), maxHunks)
	}
	// Edits of one file apply in the order the answer gives them.
	slices.SortStableFunc(out, func(a, b *fileDiff) int { return a.line - b.line })
	return out, notes, nil
}

// pathLine returns the file path a line names, when the whole line is a
// path (as Aider's formats put it before a block): optionally in
// backticks or bold, or after "#", with a colon after it. The path must
// look like one (a "." or "/" in it, or a well-known name without an
// extension), so that a line of prose is not taken for a file.
func pathLine(l string) (string, bool) {
	s := strings.TrimSpace(l)
	s = strings.TrimLeft(s, "# ")
	s = strings.TrimSuffix(strings.Trim(s, "*`"), ":")
	s = strings.Trim(s, "*`")
	if s == "" || strings.ContainsAny(s, " \t<>|\"'") || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		return "", false
	}
	if _, _, _, ok := fence(s); ok {
		return "", false
	}
	if strings.ContainsAny(s, "./") && strings.Trim(s, "./") != "" {
		return s, true
	}
	switch s {
	case "Makefile", "Dockerfile", "Containerfile", "Rakefile", "Gemfile", "Procfile", "Justfile", "Jenkinsfile", "LICENSE", "README", "CODEOWNERS":
		return s, true
	}
	return "", false
}

// literal makes a fileDiff for a path the answer names as it is (no a/ b/
// prefixes to strip).
func literal(line int, path, format string) *fileDiff {
	return &fileDiff{line: line, oldName: path, newName: path, literal: true, format: format}
}

// createsExisting is the reason an edit that creates path fails: path
// exists (with other content), in the edit's own terms.
func createsExisting(f *fileDiff, path string) string {
	switch f.format {
	case FormatSearchReplace:
		return fmt.Sprintf("its SEARCH part is empty, which creates %s, but %s exists; to change it, SEARCH for the lines to change (or for lines next to where new ones go, and repeat them in REPLACE)", path, path)
	case FormatApplyPatch:
		return fmt.Sprintf("\"*** Add File: %s\" creates it, but it exists; change it with \"*** Update File: %s\"", path, path)
	}
	return fmt.Sprintf("the diff creates %s, but it already exists", path)
}

// changesMissing is the reason an edit of path fails: there is no such
// file, in the edit's own terms.
func changesMissing(f *fileDiff, path string) string {
	switch f.format {
	case FormatSearchReplace:
		return fmt.Sprintf("%s does not exist; to create it, give it a block with an empty SEARCH part and its whole content as REPLACE", path)
	case FormatApplyPatch:
		return fmt.Sprintf("%s does not exist; to create it, use \"*** Add File: %s\" with every line starting with \"+\"", path, path)
	}
	return fmt.Sprintf("%s does not exist, and the diff changes it rather than creating it (a new file's old name is /dev/null: \"--- /dev/null\")", path)
}

// Check reads text as Apply would in the given format, without looking
// at any file: nil when it holds edits Apply could try, else the refusal
// Apply would give for the text itself (none found, a block cut off, a
// malformed envelope). found lists the formats it holds, in the order
// they first appear, each once.
func Check(text []byte, format string) (found []string, err error) {
	return check(text, format, false)
}

// CheckEnded is Check for a text whose writer says it ended there, whole
// (Options.Ended).
func CheckEnded(text []byte, format string) (found []string, err error) {
	return check(text, format, true)
}

func check(text []byte, format string, ended bool) (found []string, err error) {
	if int64(len(text)) > DefaultMaxBytes {
		return nil, refuse(BadDiff, "the edits are %d bytes, over the limit of %d", len(text), DefaultMaxBytes)
	}
	fds, _, err := parseEdits(context.Background(), text, format, DefaultMaxHunks, ended)
	if err != nil {
		return nil, err
	}
	for _, f := range fds {
		name := f.format
		if name == "" {
			name = FormatUnified
		}
		if !slices.Contains(found, name) {
			found = append(found, name)
		}
	}
	return found, nil
}

package patch

import (
	"strings"
)

// Whole files, as Aider's "whole" format asks for them: the path alone on
// a line, then the file's whole new content in a ``` block. The content
// replaces the file (or creates it). Two ways a whole file goes wrong
// without looking wrong are refused: a block never closed (the answer
// was cut off, and the file would lose its end) and a line that stands for
// lines left out ("// ... rest of the code unchanged ..."), unless the
// file has that very line already.

// parseWhole reads every fenced block of lines not yet used whose line
// before names a file.
func parseWhole(lines []string, used []bool) ([]*fileDiff, error) {
	var out []*fileDiff
	for i := 0; i < len(lines); i++ {
		if used[i] {
			continue
		}
		ch, n, _, ok := fence(lines[i])
		if !ok {
			continue
		}
		end := -1
		for j := i + 1; j < len(lines); j++ {
			if c2, n2, info, ok := fence(lines[j]); ok && c2 == ch && n2 >= n && info == "" {
				end = j
				break
			}
		}
		file, at := "", -1
		for j := i - 1; j >= 0 && !used[j]; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if p, ok := pathLine(lines[j]); ok {
				file, at = p, j
			}
			break
		}
		if file == "" {
			if end < 0 {
				break
			}
			i = end // a block that shows code, not a file
			continue
		}
		if end < 0 {
			err := refuse(BadDiff, "line %d: the ``` block holding %s is never closed: the answer was cut off in it, and the file would lose its end; nothing was changed. Send the whole file again", i+1, file)
			err.Truncated = true
			return nil, err
		}
		f := literal(at+1, file, FormatWhole)
		f.whole = true
		var b strings.Builder
		for _, l := range lines[i+1 : end] {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		f.body = []byte(b.String())
		f.bodyLine = i + 2
		for j := at; j <= end; j++ {
			used[j] = true
		}
		out = append(out, f)
		i = end
	}
	return out, nil
}

// elision matches a line that stands for lines a model left out of a
// whole file.
var elision = lazyRegexp(`(?i)^\s*(//|#|/\*|<!--|--|;|\*)?\s*(\.\.\.|…)\s*(rest|remaining|existing|other|unchanged|previous|same|more|code|as before|omitted)|` +
	`(?i)^\s*(//|#|/\*|<!--|--|;|\*)\s*.*\b(rest of (the )?(file|code|function|class|module|method)|existing code|remains? (the same|unchanged)|unchanged code|code (omitted|unchanged)|same as before)\b`)

// wholeContent is the new content of a whole-file edit on a file whose
// content is old (nil: a new file): the file's line terminator, and its
// lack of a newline at the end, are kept. It refuses a line that stands
// for lines left out.
func wholeContent(f *fileDiff, path string, old *content) ([]byte, error) {
	lines := splitKeep0(string(f.body))
	for i, l := range lines {
		if !elision().MatchString(l) {
			continue
		}
		if old != nil && len(old.index(wsAll)[normalize(l, wsAll)]) > 0 {
			continue // the file has this line: it is content
		}
		return nil, refuse(DoesNotApply, "line %d: the whole file given for %s has %q, which stands for lines left out; a whole-file edit replaces the file, so those lines would be lost. Nothing was changed. Send the whole file with every line, or change only some lines with SEARCH/REPLACE blocks", f.bodyLine+i, path, clipLine(strings.TrimSpace(l), 80))
	}
	if old == nil {
		return f.body, nil
	}
	body := string(f.body)
	if old.nl != "\n" {
		body = strings.ReplaceAll(body, "\n", old.nl)
	}
	if old.openEnd() {
		body = strings.TrimSuffix(body, old.nl)
	}
	return []byte(body), nil
}

func splitKeep0(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// applyWhole places a whole-file edit, or a deletion whatever the file
// holds (apply_patch's "*** Delete File"), on t as one hunk-like outcome.
func (p *planner) applyWhole(t *target, f *fileDiff) ([]outcome, error) {
	if t.pend != nil {
		t.set(t.newData())
	}
	h := &hunk{num: 1, line: f.line, header: "whole file", format: f.format}
	one := func(applied bool, c *content) []outcome {
		return []outcome{{t: t, total: 1, c: c, pl: &placed{h: h, applied: applied}, skip: c == nil}}
	}
	if f.removeAll {
		h.header = apDelete + " " + t.path
		if !t.exists {
			return one(false, nil), nil
		}
		t.removed += t.content().n()
		t.remove()
		return one(true, t.content()), nil
	}
	var old *content
	if t.exists {
		old = t.content()
	}
	b, err := wholeContent(f, t.path, old)
	if err != nil {
		return nil, err
	}
	if old != nil && string(b) == old.data {
		return one(false, old), nil
	}
	added, removed := lineChanges(old, splitContent(b))
	t.added += added
	t.removed += removed
	t.set(b)
	return one(true, t.content()), nil
}

// lineChanges counts the lines of nc that old lacks and the other way
// round, each line as often as it occurs: close to what a diff would
// count, without making one.
func lineChanges(old, nc *content) (added, removed int) {
	have := map[string]int{}
	if old != nil {
		for i := range old.n() {
			have[old.line(i)]++
		}
	}
	for i := range nc.n() {
		if l := nc.line(i); have[l] > 0 {
			have[l]--
		} else {
			added++
		}
	}
	for _, n := range have {
		removed += n
	}
	return added, removed
}

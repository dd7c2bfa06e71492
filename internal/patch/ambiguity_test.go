package patch

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// A refusal as ambiguous is only right when the diff really leaves the
// result open. This oracle checks that without the placer: it tries every
// way to put a file's hunks where their old sides are, and says whether
// two of those ways give different files. It allows only what holds for
// any diff a tool writes, so that a refusal the placer could have avoided
// is not excused:
//
//   - hunks come in order and do not overlap;
//   - a hunk's old side matches the file, trailing blanks aside (a model
//     copying the file drops them);
//   - a hunk with context on one side only reaches that edge of the file
//     (diff tools write all the context there is);
//   - a heading after the "@@ ... @@" is the nearest line above the hunk
//     that starts with a letter, "_" or "$" (git's default).
//
// Line numbers are not used: in the variants it is asked about they are
// missing or wrong. It shares with the package only the reading of a diff
// (parse) and of git's heading (sectionText, headingAbove); where hunks may
// go, and the files that come out, it works out on its own.

// maxTries bounds the placements tried for one file; past it the oracle
// proves nothing.
const maxTries = 100_000

// ambiguity says whether applying tr's diff is open to more than one
// result, and if so, where.
func ambiguity(t testing.TB, tr trial) (open bool, why string) {
	t.Helper()
	fds, _, err := parseCtx(context.Background(), tr.diff, 1<<20, tr.opt.Ended)
	if err != nil {
		return false, "oracle: " + err.Error()
	}
	for _, fd := range fds {
		if tr.opt.Reverse {
			fd.reverse()
		}
		p := treePath(tr.tree, fd.oldName)
		orig, ok := tr.tree[p]
		if !ok || fd.created || fd.deleted {
			continue
		}
		results, tries := outcomes(string(orig), fd.hunks)
		if tries > maxTries {
			return false, fmt.Sprintf("oracle: %s has more than %d placements", p, maxTries)
		}
		if !results[string(tr.want[p])] {
			return false, fmt.Sprintf("oracle: no placement of the hunks for %s gives the wanted file", p)
		}
		if len(results) > 1 {
			why = fmt.Sprintf("%s: %d placements give %d different files", p, tries, len(results))
			open = true
		}
	}
	return open, why
}

// treePath maps a name from the diff to a path in tree, stripping a
// leading directory if the name is not there as it is.
func treePath(tree map[string][]byte, name string) string {
	if _, ok := tree[name]; ok {
		return name
	}
	if _, rest, ok := strings.Cut(name, "/"); ok {
		return rest
	}
	return name
}

// outcomes places hunks in every allowed way and returns the distinct
// files that come out, and how many placements it tried.
func outcomes(orig string, hunks []*hunk) (map[string]bool, int) {
	lines := strings.SplitAfter(orig, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	c := splitContent([]byte(orig))
	places := make([][]int, len(hunks))
	for k, h := range hunks {
		places[k] = oraclePlaces(c, h)
	}
	results := map[string]bool{}
	tries := 0
	starts := make([]int, len(hunks))
	var walk func(k, from int)
	walk = func(k, from int) {
		if tries > maxTries {
			return
		}
		if k == len(hunks) {
			tries++
			results[build(lines, hunks, starts)] = true
			return
		}
		old, _ := hunks[k].sides()
		for _, s := range places[k] {
			if s >= from {
				starts[k] = s
				walk(k+1, s+len(old))
			}
		}
	}
	walk(0, 0)
	return results, tries
}

// oraclePlaces lists where h's old side may start in the file, trying
// every line.
func oraclePlaces(c *content, h *hunk) []int {
	old, _ := h.sides()
	lead, trail := h.context()
	heading := sectionText(h.header)
	file := c.lines(wsTrailing)
	var out []int
	for s := 0; s+len(old) <= len(file); s++ {
		ok := true
		for i, l := range old {
			if file[s+i] != normalize(l, wsTrailing) {
				ok = false
				break
			}
		}
		switch {
		case !ok:
		case lead == 0 && trail > 0 && s != 0:
		case trail == 0 && lead > 0 && s+len(old) != len(file):
		case heading != "" && !strings.HasPrefix(c.headingAbove(s), heading):
		default:
			out = append(out, s)
		}
	}
	return out
}

// build writes the file with each hunk's old side at its start replaced
// by its new side; context lines keep the file's text.
func build(lines []string, hunks []*hunk, starts []int) string {
	var b strings.Builder
	cur := 0
	for k, h := range hunks {
		for ; cur < starts[k]; cur++ {
			b.WriteString(lines[cur])
		}
		for i, o := range h.ops {
			switch o.kind {
			case ' ':
				b.WriteString(lines[cur])
				cur++
			case '-':
				cur++
			case '+':
				b.WriteString(h.text(o))
				if i < len(h.ops)-1 || !h.newNoEOL {
					b.WriteString("\n")
				}
			}
		}
	}
	for ; cur < len(lines); cur++ {
		b.WriteString(lines[cur])
	}
	return b.String()
}

package patch

import (
	"fmt"
	"strings"
)

// The refusal text is written for whoever wrote the diff, usually a model
// that will get it in its next prompt: what failed, the lines it expected,
// the part of the file that comes closest, and what did work. It stays
// around 60 lines however large the diff.

const (
	maxQuoted  = 20  // lines quoted from a hunk or the file
	maxLineLen = 160 // characters per quoted line
	maxReport  = 60  // lines in the whole report
)

func (p *planner) report() string {
	var b strings.Builder
	var first *outcome
	var others []string
	for i := range p.out {
		o := &p.out[i]
		if o.fail == nil {
			continue
		}
		if first == nil {
			first = o
			continue
		}
		if o.fail.h.format == FormatSearchReplace {
			others = append(others, fmt.Sprintf("block %d for %s (%s)", o.fail.h.num, o.t.path, shortReason(o)))
			continue
		}
		others = append(others, fmt.Sprintf("hunk %d of %d for %s (%s)", o.fail.h.num, o.total, o.t.path, shortReason(o)))
	}
	o := first
	h := o.fail.h
	switch h.format {
	case FormatSearchReplace:
		fmt.Fprintf(&b, "SEARCH/REPLACE block %d (line %d of the answer) for %s does not apply.\n", h.num, h.line, o.t.path)
	case FormatApplyPatch:
		fmt.Fprintf(&b, "Hunk %d of %d in \"*** Update File: %s\" (line %d of the answer) does not apply.\n", h.num, o.total, o.t.path, h.line)
	default:
		fmt.Fprintf(&b, "Hunk %d of %d for %s does not apply: %s\n", h.num, o.total, o.t.path, h.header)
	}
	switch {
	case o.note != "":
		fmt.Fprintf(&b, "Reason: %s.\n", o.note)
	case o.fail.indent:
		fmt.Fprintf(&b, "Its lines are at line %d of %s only with their indentation changed, and not all by the same shift, so there is no knowing how to indent the new lines. Copy the lines with their indentation exactly as they are in the file.\n", o.fail.where[0]+1, o.t.path)
	case o.fail.mixed && h.format == FormatSearchReplace:
		fmt.Fprintf(&b, "Both its SEARCH lines and its REPLACE lines are in %s (at lines %s), so it cannot tell whether the change is already made.\n", o.t.path, lineList(o.fail.where))
	case len(o.fail.where) > 1 && h.format == FormatSearchReplace:
		fmt.Fprintf(&b, "Its SEARCH lines are in %s %d times, at lines %s, and nothing tells which is meant. Add unchanged lines before or after the change, to both SEARCH and REPLACE, until SEARCH matches one place only.\n", o.t.path, len(o.fail.where), lineList(o.fail.where))
	case len(o.fail.where) > 1 && h.format == FormatApplyPatch:
		fmt.Fprintf(&b, "It matches equally well at lines %s of %s. Say which: add unchanged lines around the change until it matches one place only, or put after its \"@@\" a line of the file that comes before the place meant and after the others (\"@@ %s\").\n", lineList(o.fail.where), o.t.path, cut(o.c.headingAbove(o.fail.where[len(o.fail.where)-1])))
	case o.fail.mixed:
		fmt.Fprintf(&b, "Both its old lines and its new lines are in %s (at lines %s), so it cannot tell whether the change is already made.\n", o.t.path, lineList(o.fail.where))
	case len(o.fail.where) > 1:
		ambiguous(&b, o, p.growth(o))
	default:
		old, _ := h.sides()
		if len(old) == 0 {
			fmt.Fprintf(&b, "It has no context lines and no line numbers, so there is no telling where it goes. Add a few unchanged lines before and after the change.\n")
			break
		}
		if h.format == FormatSearchReplace {
			fmt.Fprintf(&b, "Its SEARCH lines are not in %s, exactly or with only whitespace changed:\n", o.t.path)
		} else {
			fmt.Fprintf(&b, "These lines (its context and \"-\" lines) are not in %s:\n", o.t.path)
		}
		quoteHunk(&b, h)
		closestRegion(&b, o.c, o.t.path, old, h)
	}
	unit := "hunk"
	if h.format == FormatSearchReplace {
		unit = "block"
	}
	var ok []string
	byFile := map[string][]int{}
	for _, x := range p.out {
		if x.pl != nil && x.pl.applied {
			if _, seen := byFile[x.t.path]; !seen {
				ok = append(ok, x.t.path)
			}
			byFile[x.t.path] = append(byFile[x.t.path], x.pl.h.num)
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(&b, "Also failing: %s.\n", strings.Join(capList(others, 8), "; "))
	}
	if len(ok) > 0 {
		var parts []string
		for _, f := range ok {
			parts = append(parts, fmt.Sprintf("%s %s %s", f, unit, intList(byFile[f])))
		}
		fmt.Fprintf(&b, "These would apply: %s.\n", strings.Join(capList(parts, 8), "; "))
	} else {
		fmt.Fprintf(&b, "No other %s would apply either.\n", unit)
	}
	switch h.format {
	case FormatSearchReplace:
		b.WriteString("Nothing was changed. Send all the blocks again with this one fixed; copy the SEARCH lines exactly from the file.")
	case FormatApplyPatch:
		b.WriteString("Nothing was changed. Send the whole patch again (\"*** Begin Patch\" to \"*** End Patch\") with this hunk fixed; copy context and \"-\" lines exactly from the file.")
	default:
		b.WriteString("Nothing was changed. Send the whole diff again with this hunk fixed; copy context and \"-\" lines exactly from the file.")
	}
	return clip(b.String())
}

// ambiguous says where a hunk matched and how to say which place is
// meant. A diff names one place by its line numbers, by git's heading
// after the "@@" when the places lie under different headings, or by more
// context.
func ambiguous(b *strings.Builder, o *outcome, growth int) {
	where := o.fail.where
	fmt.Fprintf(b, "It matches equally well at lines %s of %s, and nothing in the diff tells these apart.\n", lineList(where), o.t.path)
	headings := map[string]bool{}
	for _, at := range where {
		headings[o.c.headingAbove(at)] = true
	}
	distinct := len(headings) == len(where) && !headings[""]
	if distinct {
		for _, at := range where[:min(len(where), 8)] {
			fmt.Fprintf(b, "  line %d, under: %s\n", at+1, cut(o.c.headingAbove(at)))
		}
	}
	old, new := o.fail.h.sides()
	eg := fmt.Sprintf("@@ -%d,%d +%d,%d @@", where[0]+1, len(old), where[0]+1+growth, len(new))
	ways := fmt.Sprintf("put the line numbers in the header (%q for line %d)", eg, where[0]+1)
	if distinct {
		ways += fmt.Sprintf(", or the line it is under after the header, as git does (\"%s %s\")", eg, cut(o.c.headingAbove(where[0])))
	}
	fmt.Fprintf(b, "Say which: %s, or add unchanged lines around the change until it matches one place only.\n", ways)
}

// growth is how many lines the hunks before o's in its file add, less
// those they remove: the new side starts that much further on.
func (p *planner) growth(o *outcome) int {
	n := 0
	for _, x := range p.out {
		h := x.hunk()
		if x.t == o.t && h.num < o.fail.h.num {
			old, new := h.sides()
			n += len(new) - len(old)
		}
	}
	return n
}

func shortReason(o *outcome) string {
	switch {
	case o.note != "":
		return o.note
	case o.fail.indent:
		return "its indentation differs from the file's unevenly"
	case o.fail.mixed:
		return "unclear whether already applied"
	case len(o.fail.where) > 1:
		return "matches at lines " + lineList(o.fail.where)
	}
	return "its lines are not in the file"
}

func (p *planner) partialReport(done, in []string) string {
	applied, already := capList(done, 10), capList(in, 10)
	for _, o := range p.out {
		s := fmt.Sprintf("%s hunk %d", o.t.path, o.pl.h.num)
		if o.pl.applied {
			applied = append(applied, s)
		} else {
			already = append(already, s)
		}
	}
	return clip(fmt.Sprintf("The diff is partly applied already: %s already in place, but %s not. Nothing was changed. Send only the changes still missing, against the file as it is now.",
		strings.Join(capList(already, 10), ", "), strings.Join(capList(applied, 10), ", ")))
}

func quoteHunk(b *strings.Builder, h *hunk) {
	n := 0
	for _, o := range h.ops {
		if o.kind == '+' {
			continue
		}
		if n == maxQuoted {
			b.WriteString("    ...\n")
			break
		}
		if h.format == FormatSearchReplace {
			fmt.Fprintf(b, "    %s\n", cut(h.text(o)))
		} else {
			fmt.Fprintf(b, "   %c%s\n", o.kind, cut(h.text(o)))
		}
		n++
	}
}

// closestRegion shows the part of the file where most of the old lines
// sit at the right distance from each other, with line numbers, marking
// the lines that differ from the hunk.
func closestRegion(b *strings.Builder, c *content, name string, old []string, h *hunk) {
	if c == nil || c.n() == 0 {
		fmt.Fprintf(b, "%s is empty.\n", name)
		return
	}
	start, agree := closest(c, old, h)
	if agree == 0 {
		fmt.Fprintf(b, "None of these lines are anywhere in %s.\n", name)
		return
	}
	end := min(start+len(old), c.n())
	fmt.Fprintf(b, "The closest part of %s is lines %d-%d (%d of %d lines agree; ! marks lines that differ):\n", name, start+1, end, agree, len(old))
	lines := c.lines(wsAll)
	for i := start; i < end; i++ {
		if i-start == maxQuoted {
			b.WriteString("    ...\n")
			break
		}
		mark := "!"
		if lines[i] == normalize(old[i-start], wsAll) {
			mark = " "
		}
		fmt.Fprintf(b, "%s %5d | %s\n", mark, i+1, cut(c.line(i)))
	}
}

// closest finds the start where the most old lines agree (whitespace
// ignored), by letting each occurrence of each line vote for the start it
// implies. Ties go to the place nearest the header's line.
func closest(c *content, old []string, h *hunk) (start, agree int) {
	idx := c.index(wsAll)
	votes := map[int]int{}
	for i, l := range old {
		occ := idx[normalize(l, wsAll)]
		if len(occ) > 200 || normalize(l, wsAll) == "" {
			continue // too common to say anything
		}
		for _, at := range occ {
			votes[at-i]++
		}
	}
	hint := 0
	if h.hasHint {
		hint = h.oldHint
	}
	best := -1
	for s, v := range votes {
		if s < 0 || s >= c.n() {
			continue
		}
		if best < 0 || v > votes[best] || (v == votes[best] && (abs(s-hint) < abs(best-hint) || (abs(s-hint) == abs(best-hint) && s < best))) {
			best = s
		}
	}
	if best < 0 {
		return 0, 0
	}
	lines := c.lines(wsAll)
	for i, l := range old {
		if best+i < len(lines) && lines[best+i] == normalize(l, wsAll) {
			agree++
		}
	}
	return best, agree
}

func cut(s string) string {
	if len(s) > maxLineLen {
		return s[:maxLineLen] + "..."
	}
	return s
}

func lineList(starts []int) string {
	var parts []string
	for _, s := range starts[:min(len(starts), 8)] {
		parts = append(parts, fmt.Sprint(s+1))
	}
	if len(starts) > 8 {
		parts = append(parts, fmt.Sprintf("and %d more", len(starts)-8))
	}
	return strings.Join(parts, ", ")
}

func intList(ns []int) string {
	var parts []string
	for _, n := range ns {
		parts = append(parts, fmt.Sprint(n))
	}
	return strings.Join(capList(parts, 12), ", ")
}

func capList(items []string, n int) []string {
	if len(items) <= n {
		return items
	}
	return append(items[:n:n], fmt.Sprintf("and %d more", len(items)-n))
}

// clip keeps the report within maxReport lines.
func clip(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) <= maxReport {
		return s
	}
	return strings.Join(lines[:maxReport-1], "\n") + "\n(report cut)"
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

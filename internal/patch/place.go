package patch

import (
	"slices"
	"strings"
)

// Placing a hunk means finding where its old side sits in the file.
//
// The search goes from strict to loose: exact text, trailing whitespace
// ignored, all whitespace ignored, then the same with one to four context
// lines dropped from the hunk's edges (at most two per edge, never below one
// line of context). The first level where anything matches decides, and a
// place is taken only if nothing else there is as good. When several places
// match equally well, these may pick one, in order:
//
//   - the heading after the "@@ ... @@" (git puts the enclosing func or
//     type there, and models copy the habit);
//   - the file's edge, for a hunk with context on one side only (diff
//     tools always write the context there is, so such a hunk reaches the
//     start or end of the file);
//   - the header's line numbers, but only when every numbered hunk of the
//     diff is exactly where its header says (see hintsHold): a model's
//     numbers are often off, and an off number can land right on a
//     repeated block;
//   - the order of hunks: a hunk comes before the next hunk that matches in
//     exactly one place (see upper).
//
// Otherwise it is a refusal, not a guess.
//
// Hunks are placed in order, each after the one before (they may share
// context lines, as hand-written hunks often do). The new side is looked for
// too, at the same levels, to tell a hunk that is already applied from one
// that does not apply.

// maxFuzzPerEdge is how many context lines may be dropped from each edge.
const maxFuzzPerEdge = 2

type placed struct {
	h       *hunk
	applied bool // false: its new side is already in the file
	start   int  // file line of ops[0]
	end     int  // file line after the last line ops cover
	ops     []op // the hunk's ops, without context dropped by fuzz
	top     int  // context lines dropped at the top
	trail   int  // context lines at the end of ops
	fuzz    int
	ws      int // whitespace level
	// keepOpen: the last line it adds ends the file without a newline,
	// as the file's last line did (see place).
	keepOpen bool
}

// failure is a hunk that could not be placed.
type failure struct {
	h     *hunk
	where []int // 0-based candidate starts when it matched in several places
	mixed bool  // both its old and its new side are in the file
	// indent: it matched at where[0] only with whitespace ignored, and
	// not by one shift of indentation (see reindent).
	indent bool
}

// cand is a match: the matched lines (the hunk's side less top and bot
// context lines) are n lines at start.
type cand struct{ start, top, bot, ws, n int }

type placer struct {
	c       *content
	hunks   []*hunk
	trust   bool    // line numbers may break ties (see hintsHold)
	anchors [][]int // per hunk: every place of its whole old side (see upper)
	done    []bool  // anchors[k] computed
}

// placeAll places a file's hunks in order.
func placeAll(c *content, hunks []*hunk, trust bool) ([]placed, []failure) {
	p := &placer{c: c, hunks: hunks, trust: trust, anchors: make([][]int, len(hunks)), done: make([]bool, len(hunks))}
	out := make([]placed, 0, len(hunks)) // sized once: usually all place
	var fails []failure
	lo, prevTrail := 0, 0
	for k := range hunks {
		pl, f := p.place(k, lo, prevTrail)
		if f != nil {
			fails = append(fails, *f)
			continue
		}
		out = append(out, pl)
		lo, prevTrail = pl.end, pl.trail
	}
	return out, fails
}

// hintsHold reports whether every hunk with line numbers sits exactly at
// the line its header gives, old side or (already applied) new side,
// whitespace aside. Only then may line numbers choose between places.
// It reads the sides from the ops (see matchSide): building them for
// every hunk of a large diff was a large share of its allocations.
func hintsHold(c *content, hunks []*hunk) bool {
	for _, h := range hunks {
		if nOld, _ := h.counts(); !h.hasHint || nOld == 0 {
			continue
		}
		if !matchLoose(c, h, '-', h.oldHint) && !matchLoose(c, h, '+', h.newHint) {
			return false
		}
	}
	return true
}

func matchLoose(c *content, h *hunk, side byte, at int) bool {
	return c.matchSide(h, h.ops, side, at, wsExact) || c.matchSide(h, h.ops, side, at, wsAll)
}

// hint is where the header puts a side of h, if line numbers are trusted.
func (p *placer) hint(h *hunk, side byte) (int, bool) {
	if !h.hasHint || !p.trust {
		return 0, false
	}
	if side == '+' {
		return h.newHint, true
	}
	return h.oldHint, true
}

func (p *placer) place(k, lo, prevTrail int) (placed, *failure) {
	pl, f := p.locate(k, lo, prevTrail)
	if f == nil && !pl.applied && pl.h.format != "" {
		// Its new side is there and its old side is not. When the new
		// lines are a run of the old ones (lines removed at an edge), they
		// were there before the edit too: that proves nothing, and the
		// old side is what did not match.
		if old, new := pl.h.sides(); runOf(new, old) {
			return placed{}, &failure{h: pl.h}
		}
	}
	if f != nil || !pl.applied {
		return pl, f
	}
	if pl.h.reindent && pl.ws == wsAll {
		h, ops, ok := reindent(p.c, pl)
		if !ok {
			return placed{}, &failure{h: pl.h, indent: true, where: []int{pl.start - pl.top}}
		}
		pl.h, pl.ops = h, ops
	}
	// The other formats cannot say that the file ends without a newline
	// (a unified diff says "\ No newline at end of file"): a change
	// reaching the end of such a file keeps it so.
	if pl.h.format != "" && pl.end == p.c.n() && p.c.openEnd() {
		pl.keepOpen = true
	}
	// A hunk that only adds or removes the newline at the end of the file
	// has the same text on both sides: the file's last line says which
	// side it holds.
	h := pl.h
	if pl.end != p.c.n() || p.c.n() == 0 {
		return pl, nil
	}
	if old, new := h.sides(); slices.Equal(old, new) {
		if p.c.openEnd() == h.newNoEOL {
			pl.applied = false
		}
	}
	return pl, nil
}

func (p *placer) locate(k, lo, prevTrail int) (placed, *failure) {
	h := p.hunks[k]
	nOld, nNew := h.counts()
	if nOld == 0 {
		return p.placeBare(h, lo)
	}

	// Fast path: the whole old side is exactly at the header's line, and
	// is not just part of the new side being there already. It compares
	// the ops with the file's lines, building no sides.
	if at, ok := p.hint(h, '-'); ok && at >= lo && p.c.matchSide(h, h.ops, '-', at, wsExact) && !p.nested(h, nOld, nNew, at) {
		return p.result(h, true, cand{start: at}), nil
	}
	old, new := h.sides()

	// Walk the levels and decide at the first where either side matches.
	// A match of one side inside a (loose) match of the other, longer side
	// is the longer side being there: a deletion at the end of a file has
	// a new side that is the start of its old side, an addition the other
	// way round.
	var looseOld, looseNew []cand
	loose := func(side byte, have *[]cand) []cand {
		if *have == nil {
			*have = append(p.candidates(h, side, 0, wsAll, lo, prevTrail), cand{start: -1})
		}
		return *have
	}
	lead, trail := h.context()
	maxFuzz := min(lead, maxFuzzPerEdge) + min(trail, maxFuzzPerEdge)
	if h.format != "" {
		// The other formats get no fuzz: a hunk found only with context
		// lines dropped is not provably where the edit meant.
		maxFuzz = 0
	}
	var already []cand // the new side, found but not decisively
	for fuzz := 0; fuzz <= maxFuzz; fuzz++ {
		for ws := wsExact; ws < numWS; ws++ {
			oc := p.candidates(h, '-', fuzz, ws, lo, prevTrail)
			nc := p.candidates(h, '+', fuzz, ws, lo, prevTrail)
			if len(oc) > 0 && len(new) > len(old) {
				oc = dropInside(oc, loose('+', &looseNew))
			}
			if len(nc) > 0 && len(old) >= len(new) {
				nc = dropInside(nc, loose('-', &looseOld))
			}
			if len(oc) == 0 && len(nc) == 0 {
				continue
			}
			pl, f, final := p.decide(k, lo, oc, nc)
			if final {
				return pl, f
			}
			if already == nil {
				already = nc
			}
		}
	}
	if already != nil {
		return p.result(h, false, already[0]), nil
	}
	return placed{}, &failure{h: h}
}

// decide picks among the matches found at one level (see the top of this
// file). final is false when only the new side matched and that is too
// little to call the hunk applied before looking for its old side at
// looser levels: in several places, or away from the edge an edge hunk
// reaches.
func (p *placer) decide(k, lo int, oc, nc []cand) (_ placed, _ *failure, final bool) {
	h := p.hunks[k]
	sec := sectionText(h.header)
	if h.format == FormatApplyPatch {
		oc, nc = p.afterAnchor(oc, sec, lo), p.afterAnchor(nc, sec, lo)
	} else {
		oc, nc = p.bySection(oc, sec), p.bySection(nc, sec)
	}
	// Only a diff tool writes all the context there is, so only its
	// one-sided hunks reach an edge of the file.
	if lead, trail := h.context(); h.format == "" && (lead == 0) != (trail == 0) {
		oe, ne := p.atEdge(oc, lead == 0), p.atEdge(nc, lead == 0)
		switch {
		case len(oe)+len(ne) > 0:
			oc, nc = oe, ne
		case len(oc) == 0:
			return placed{}, nil, false
		}
	}
	if at, ok := p.hint(h, '-'); ok {
		if c, ok := candAt(oc, at); ok {
			return p.result(h, true, c), nil, true
		}
	}
	if at, ok := p.hint(h, '+'); ok {
		if c, ok := candAt(nc, at); ok {
			return p.result(h, false, c), nil, true
		}
	}
	if len(oc) > 1 {
		oc = p.beforeNext(k, lo, oc)
	}
	switch {
	case len(oc) > 0 && len(nc) > 0:
		return placed{}, &failure{h: h, mixed: true, where: starts(append(oc, nc...))}, true
	case len(oc) == 1:
		return p.result(h, true, oc[0]), nil, true
	case len(oc) > 1:
		return placed{}, &failure{h: h, where: starts(oc)}, true
	case len(nc) == 1:
		return p.result(h, false, nc[0]), nil, true
	}
	return placed{}, nil, false
}

// placeBare places a hunk with no old lines at all (an insertion written
// without context): only its header can say where it goes.
func (p *placer) placeBare(h *hunk, lo int) (placed, *failure) {
	_, new := h.sides()
	at, ok := p.hint(h, '-')
	if !ok || at < lo || at > p.c.n() {
		return placed{}, &failure{h: h}
	}
	return p.result(h, !p.c.matchAt(new, at, wsExact), cand{start: at}), nil
}

// nested reports whether the old side of h (nOld lines) at `at` is only
// there because the longer new side (nNew lines) is (an addition at the
// end of a file).
func (p *placer) nested(h *hunk, nOld, nNew, at int) bool {
	if nNew <= nOld {
		return false
	}
	for n := max(0, at+nOld-nNew); n <= at; n++ {
		if p.c.matchSide(h, h.ops, '+', n, wsExact) {
			return true
		}
	}
	return false
}

// candidates finds where side ('-' old, '+' new) of h matches with fuzz
// context lines dropped, at whitespace level ws, at or after lo. A
// candidate may start up to prevTrail lines before lo, sharing context with
// the previous hunk.
func (p *placer) candidates(h *hunk, side byte, fuzz, ws, lo, prevTrail int) []cand {
	lead, trail := h.context()
	nctx := 0
	for _, o := range h.ops {
		if o.kind == ' ' {
			nctx++
		}
	}
	var out []cand
	var seen map[int]bool // several edge trims can find the same place
	if fuzz > 0 {
		seen = map[int]bool{}
	}
	for top := 0; top <= fuzz; top++ {
		bot := fuzz - top
		if top > min(lead, maxFuzzPerEdge) || bot > min(trail, maxFuzzPerEdge) {
			continue
		}
		if nctx > 0 && nctx-top-bot < 1 {
			continue // never below one line of context
		}
		pat := sideOf(h, h.ops[top:len(h.ops)-bot], side, ws)
		if len(pat) == 0 {
			continue
		}
		from := max(0, lo-min(prevTrail, max(0, lead-top)))
		for _, q := range p.c.find(pat, from, p.c.n(), ws) {
			if seen == nil || !seen[q-top] {
				if seen != nil {
					seen[q-top] = true
				}
				out = append(out, cand{q, top, bot, ws, len(pat)})
			}
		}
	}
	return out
}

func sideOf(h *hunk, ops []op, side byte, ws int) []string {
	var out []string
	skip := byte('+')
	if side == '+' {
		skip = '-'
	}
	for _, o := range ops {
		if o.kind != skip {
			out = append(out, normalize(h.text(o), ws))
		}
	}
	return out
}

// dropInside drops the matches that lie within one of outer. A match
// is within one iff the outer matches starting at or before it reach at
// least as far, so one sweep over both sorted by start does it.
func dropInside(cs, outer []cand) []cand {
	cs = slices.Clone(cs)
	outer = slices.Clone(outer)
	byStart := func(a, b cand) int { return a.start - b.start }
	slices.SortFunc(cs, byStart)
	slices.SortFunc(outer, byStart)
	var out []cand
	reach, j := -1, 0
	for _, c := range cs {
		for ; j < len(outer) && outer[j].start <= c.start; j++ {
			if outer[j].start >= 0 {
				reach = max(reach, outer[j].start+outer[j].n)
			}
		}
		if reach < c.start+c.n {
			out = append(out, c)
		}
	}
	return out
}

// sectionText is the text after a hunk header's closing "@@".
func sectionText(header string) string {
	s := strings.TrimPrefix(header, "@@")
	i := strings.Index(s, "@@")
	if i < 0 {
		return ""
	}
	return strings.TrimSpace(s[i+2:])
}

// bySection keeps, of several candidates, those under the heading the
// hunk names, if that leaves any.
func (p *placer) bySection(cs []cand, sec string) []cand {
	if len(cs) < 2 || sec == "" {
		return cs
	}
	var out []cand
	for _, c := range cs {
		if strings.HasPrefix(p.c.headingAbove(c.start-c.top), sec) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return cs
	}
	return out
}

// afterAnchor keeps, of several candidates, those after the first line at
// or after lo that is the anchor an apply_patch hunk names after its "@@"
// (blanks around it aside), if that leaves any. That is all the anchor
// says: the hunk is below that line, not that it is the nearest heading.
func (p *placer) afterAnchor(cs []cand, anchor string, lo int) []cand {
	anchor = strings.TrimSpace(anchor)
	if len(cs) < 2 || anchor == "" {
		return cs
	}
	at := -1
	for i := lo; i < p.c.n(); i++ {
		if strings.TrimSpace(p.c.line(i)) == anchor {
			at = i
			break
		}
	}
	if at < 0 {
		return cs
	}
	var out []cand
	for _, c := range cs {
		if c.start-c.top > at {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return cs
	}
	return out
}

// atEdge keeps the candidates at the start (start=true) or the end of
// the file.
func (p *placer) atEdge(cs []cand, start bool) []cand {
	var out []cand
	for _, c := range cs {
		if (start && c.start-c.top == 0) || (!start && c.start+c.n == p.c.n()) {
			out = append(out, c)
		}
	}
	return out
}

// beforeNext keeps, of several candidates, those that end before the
// next hunk that matches exactly in one place, if that leaves any.
func (p *placer) beforeNext(k, lo int, cs []cand) []cand {
	hi := p.upper(k, lo)
	var out []cand
	for _, c := range cs {
		if c.start+c.n <= hi {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return cs
	}
	return out
}

// upper is where the first later hunk whose whole old side matches in
// exactly one place at or after lo starts, plus its leading context
// (which may be shared). Its old side is looked for at the strictest
// whitespace level where it matches at all, as locate would: a model that
// dropped trailing blanks from one hunk dropped them from all.
func (p *placer) upper(k, lo int) int {
	for j := k + 1; j < len(p.hunks); j++ {
		if !p.done[j] {
			old, _ := p.hunks[j].sides()
			for ws := wsExact; ws < numWS && len(p.anchors[j]) == 0; ws++ {
				p.anchors[j] = p.c.find(normalizeAll(old, ws), 0, p.c.n(), ws)
			}
			p.done[j] = true
		}
		// anchors[j] is in file order.
		if i, _ := slices.BinarySearch(p.anchors[j], lo); i == len(p.anchors[j])-1 {
			lead, _ := p.hunks[j].context()
			return min(p.c.n(), p.anchors[j][i]+lead)
		}
	}
	return p.c.n()
}

func candAt(cs []cand, at int) (cand, bool) {
	for _, c := range cs {
		if c.start-c.top == at {
			return c, true
		}
	}
	return cand{}, false
}

func starts(cs []cand) []int {
	out := make([]int, len(cs))
	for i, c := range cs {
		out[i] = c.start - c.top
	}
	return out
}

func (p *placer) result(h *hunk, applied bool, c cand) placed {
	ops := h.ops[c.top : len(h.ops)-c.bot]
	n := 0
	for _, o := range ops {
		if (applied && o.kind != '+') || (!applied && o.kind != '-') {
			n++
		}
	}
	trail := 0
	for trail < len(ops) && ops[len(ops)-1-trail].kind == ' ' {
		trail++
	}
	return placed{h: h, applied: applied, start: c.start, end: c.start + n, ops: ops, top: c.top,
		trail: trail, fuzz: c.top + c.bot, ws: c.ws}
}

// reindent makes a hunk found only with whitespace ignored (ws level
// wsAll) say what it meant. That is provable in one case: every line it
// matched differs from the file by the same shift of its leading
// whitespace (the model wrote the block one level too far in or out);
// its added lines then take the same shift. Any other difference of
// leading whitespace (lines shifted differently, tabs for spaces) leaves
// it unknown how the added lines should be indented: not ok.
// The re-indented ops' texts are new: they go into a copy of the hunk
// (its own buffer clipped, so the two never write to the same memory),
// which the placed hunk then refers to.
func reindent(c *content, pl placed) (*hunk, []op, bool) {
	const (
		unknown = iota
		same    // no line's indentation differs
		add     // the file has prefix before each line's own indentation
		drop    // the hunk has prefix too many
	)
	mode, prefix := unknown, ""
	at := pl.start
	for _, o := range pl.ops {
		if o.kind == '+' {
			continue
		}
		f := c.line(at)
		at++
		if strings.TrimSpace(f) == "" && strings.TrimSpace(pl.h.text(o)) == "" {
			continue
		}
		lf, lo := leading(f), leading(pl.h.text(o))
		m, p := same, ""
		switch {
		case lf == lo:
		case strings.HasSuffix(lf, lo):
			m, p = add, lf[:len(lf)-len(lo)]
		case strings.HasSuffix(lo, lf):
			m, p = drop, lo[:len(lo)-len(lf)]
		default:
			return nil, nil, false
		}
		if mode == unknown {
			mode, prefix = m, p
		} else if m != mode || p != prefix {
			return nil, nil, false
		}
	}
	if mode == same || mode == unknown {
		return pl.h, pl.ops, true // only blanks inside lines differ
	}
	h := *pl.h
	h.own = slices.Clip(h.own)
	out := make([]op, len(pl.ops))
	for i, o := range pl.ops {
		out[i] = o
		text := pl.h.text(o)
		if o.kind != '+' || strings.TrimSpace(text) == "" {
			continue
		}
		switch mode {
		case add:
			out[i] = h.ref(o.kind, prefix+text, o.cr)
		case drop:
			t, ok := strings.CutPrefix(text, prefix)
			if !ok {
				return nil, nil, false
			}
			out[i] = h.ref(o.kind, t, o.cr)
		}
	}
	return &h, out, true
}

func leading(s string) string { return s[:len(s)-len(strings.TrimLeft(s, " \t"))] }

// runOf reports whether the lines of a are a run of consecutive lines of
// b (whitespace aside).
func runOf(a, b []string) bool {
	if len(a) > len(b) {
		return false
	}
	na, nb := normalizeAll(a, wsAll), normalizeAll(b, wsAll)
	for i := 0; i+len(na) <= len(nb); i++ {
		if slices.Equal(na, nb[i:i+len(na)]) {
			return true
		}
	}
	return false
}

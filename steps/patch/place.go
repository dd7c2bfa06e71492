package patch

import (
	"slices"
	"strings"
)

// Placing a hunk means finding where its old side sits in the file. The
// search goes from strict to loose: at the header's line, anywhere (the
// header may be wrong), ignoring trailing then all whitespace, then with
// up to two context lines dropped from either edge. At each step a place is
// taken only if it is at the header's line or is the only one: two equally
// good places are a refusal, not a guess.
//
// Hunks are placed in order, each after the one before (they may share
// context lines, as hand-written hunks often do) and before the next hunk
// whose old side matches in exactly one place.
//
// The new side is looked for the same way, to tell a hunk that is already
// applied from one that does not apply.

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
}

// failure is a hunk that could not be placed.
type failure struct {
	h     *hunk
	where []int // 0-based candidate starts when it matched in several places
	mixed bool  // both its old and its new side are in the file
}

type placer struct {
	c     *content
	hunks []*hunk
	trust bool    // line numbers may break ties: the diff's are all right
	delta int     // how far the last placed hunk was from its header's line
	exact [][]int // per hunk: every exact place of its whole old side; nil = not computed
	done  []bool
}

// placeAll places a file's hunks in order. trust says whether line
// numbers may choose between equally good places (see hintsHold).
func placeAll(c *content, hunks []*hunk, trust bool) ([]placed, []failure) {
	p := &placer{c: c, hunks: hunks, trust: trust, exact: make([][]int, len(hunks)), done: make([]bool, len(hunks))}
	var out []placed
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
		hint := pl.h.oldHint
		if !pl.applied {
			hint = pl.h.newHint
		}
		if pl.h.hasHint {
			p.delta = pl.start - pl.top - hint
		}
	}
	return out, fails
}

func (p *placer) hints(h *hunk, side byte) []int {
	if !h.hasHint || !p.trust {
		return nil
	}
	base := h.oldHint
	if side == '+' {
		base = h.newHint
	}
	if p.delta == 0 {
		return []int{base}
	}
	return []int{base + p.delta, base}
}

func (p *placer) place(k, lo, prevTrail int) (placed, *failure) {
	pl, f := p.locate(k, lo, prevTrail)
	if f != nil || !pl.applied {
		return pl, f
	}
	// A hunk that only adds or removes the newline at the end of the file
	// has the same text on both sides: the file's last line says which
	// side it holds.
	h := pl.h
	if old, new := h.sides(); slices.Equal(old, new) && pl.end == len(p.c.text) && len(p.c.text) > 0 {
		if (p.c.eol[len(p.c.eol)-1] == "") == h.newNoEOL {
			pl.applied = false
		}
	}
	return pl, nil
}

func (p *placer) locate(k, lo, prevTrail int) (placed, *failure) {
	h := p.hunks[k]
	old, new := h.sides()
	if len(old) == 0 {
		return p.placeBare(h, lo)
	}

	// Fast path: the whole old side is exactly at the header's line (and
	// the diff's line numbers are right), and is not just part of the new
	// side being there already.
	for _, at := range p.hints(h, '-') {
		if at >= lo && p.c.matchAt(old, at, wsExact) && !p.nested(new, old, at) {
			return p.result(h, true, cand{start: at}), nil
		}
	}

	// Walk the levels from strict to loose and decide at the first where
	// either side matches. A match of one side inside a match of the
	// other, longer side (loosely, any whitespace) is the longer side
	// being there: a deletion at the end of a file has a new side that is
	// the start of its old side, an addition one the other way round.
	hi := len(p.c.text)
	var looseOld, looseNew []cand
	loose := func(side byte, have *[]cand) []cand {
		if *have == nil {
			*have = append(p.candidates(h, side, 0, wsAll, lo, hi, prevTrail), cand{start: -1})
		}
		return *have
	}
	lead, trail := h.context()
	maxTop, maxBot := min(lead, maxFuzzPerEdge), min(trail, maxFuzzPerEdge)
	var already []cand // new side found in several places: weak evidence
	for fuzz := 0; fuzz <= maxTop+maxBot; fuzz++ {
		for ws := wsExact; ws < numWS; ws++ {
			oc := p.candidates(h, '-', fuzz, ws, lo, hi, prevTrail)
			nc := p.candidates(h, '+', fuzz, ws, lo, hi, prevTrail)
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
		return p.result(h, false, nearest(already, p.hints(h, '+'))), nil
	}
	return placed{}, &failure{h: h}
}

// decide picks among the matches found at one level: those under the
// heading the hunk names, those at the file's edge an edge hunk touches,
// then the one at the header's line (if line numbers are trusted), else
// the only one. final is false when only the new side matched and that is
// too little to call the hunk applied before looking for its old side at
// looser levels: in several places, or away from the edge an edge hunk
// touches.
func (p *placer) decide(k, lo int, oc, nc []cand) (_ placed, _ *failure, final bool) {
	h := p.hunks[k]
	sec := sectionText(h.header)
	oc, nc = p.bySection(oc, sec), p.bySection(nc, sec)
	if lead, trail := h.context(); (lead == 0) != (trail == 0) {
		// Diff tools always write the context there is, so a hunk with
		// context on one side only reaches the start or end of the file.
		oe, ne := p.atEdge(oc, lead == 0), p.atEdge(nc, lead == 0)
		switch {
		case len(oe)+len(ne) > 0:
			oc, nc = oe, ne
		case len(oc) == 0:
			return placed{}, nil, false
		}
	}
	if c, ok := atHint(oc, p.hints(h, '-')); ok {
		return p.result(h, true, c), nil, true
	}
	if c, ok := atHint(nc, p.hints(h, '+')); ok {
		return p.result(h, false, c), nil, true
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

// atEdge keeps the candidates at the start (start=true) or the end of
// the file.
func (p *placer) atEdge(cs []cand, start bool) []cand {
	var out []cand
	for _, c := range cs {
		if (start && c.start == 0) || (!start && c.start+c.n == len(p.c.text)) {
			out = append(out, c)
		}
	}
	return out
}

// dropInside drops the matches that lie within one of outer.
func dropInside(cs, outer []cand) []cand {
	var out []cand
	for _, c := range cs {
		inside := false
		for _, o := range outer {
			if o.start >= 0 && c.start >= o.start && c.start+c.n <= o.start+o.n {
				inside = true
				break
			}
		}
		if !inside {
			out = append(out, c)
		}
	}
	return out
}

// sectionText is the text after a hunk header's closing "@@": git puts there
// the line above the hunk that starts with a letter, "_" or "$" (in Go,
// the enclosing func or type), and models copy the habit.
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
		if strings.HasPrefix(p.headingAbove(c.start-c.top), sec) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return cs
	}
	return out
}

func (p *placer) headingAbove(at int) string {
	for i := min(at, len(p.c.text)) - 1; i >= 0; i-- {
		if l := p.c.text[i]; l != "" && (isLetter(l[0]) || l[0] == '_' || l[0] == '$') {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// placeBare places a hunk with no old lines at all (an insertion written
// without context): only its header can say where it goes.
func (p *placer) placeBare(h *hunk, lo int) (placed, *failure) {
	_, new := h.sides()
	for _, at := range p.hints(h, '-') {
		if at < lo || at > len(p.c.text) {
			continue
		}
		return p.result(h, !p.c.matchAt(new, at, wsExact), cand{start: at}), nil
	}
	return placed{}, &failure{h: h}
}

// nested reports whether the old side at `at` is only there because the
// longer new side is: an addition at the very start or end of a file with
// no context on that side has an old side that is part of its new side.
func (p *placer) nested(new, old []string, at int) bool {
	if len(new) <= len(old) {
		return false
	}
	for n := max(0, at+len(old)-len(new)); n <= at; n++ {
		if p.c.matchAt(new, n, wsExact) {
			return true
		}
	}
	return false
}

// cand is a match: the matched lines (the hunk's side less top and bot
// context lines) are n lines at start.
type cand struct{ start, top, bot, ws, n int }

// candidates finds where side ('-' old, '+' new) of h matches with fuzz
// context lines dropped, at whitespace level ws, between lo and hi. A
// candidate may start up to prevTrail lines before lo, sharing context with
// the previous hunk.
func (p *placer) candidates(h *hunk, side byte, fuzz, ws, lo, hi, prevTrail int) []cand {
	lead, trail := h.context()
	nctx := 0
	for _, o := range h.ops {
		if o.kind == ' ' {
			nctx++
		}
	}
	var out []cand
	seen := map[int]bool{}
	for top := 0; top <= fuzz; top++ {
		bot := fuzz - top
		if top > min(lead, maxFuzzPerEdge) || bot > min(trail, maxFuzzPerEdge) {
			continue
		}
		if nctx > 0 && nctx-top-bot < 1 {
			continue // never below one line of context
		}
		ops := h.ops[top : len(h.ops)-bot]
		pat := sideOf(ops, side, ws)
		if len(pat) == 0 {
			continue
		}
		from := max(0, lo-min(prevTrail, max(0, lead-top)))
		for _, q := range p.c.find(pat, from, hi, ws) {
			if !seen[q-top] {
				seen[q-top] = true
				out = append(out, cand{q, top, bot, ws, len(pat)})
			}
		}
	}
	return out
}

func sideOf(ops []op, side byte, ws int) []string {
	var out []string
	skip := byte('+')
	if side == '+' {
		skip = '-'
	}
	for _, o := range ops {
		if o.kind != skip {
			out = append(out, normalize(o.text, ws))
		}
	}
	return out
}

func atHint(cs []cand, hints []int) (cand, bool) {
	for _, h := range hints {
		for _, c := range cs {
			if c.start-c.top == h {
				return c, true
			}
		}
	}
	return cand{}, false
}

func nearest(cs []cand, hints []int) cand {
	if len(hints) == 0 {
		return cs[0]
	}
	best := cs[0]
	for _, c := range cs[1:] {
		if abs(c.start-c.top-hints[0]) < abs(best.start-best.top-hints[0]) {
			best = c
		}
	}
	return best
}

func starts(cs []cand) []int {
	out := make([]int, len(cs))
	for i, c := range cs {
		out[i] = c.start - c.top
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// beforeNext keeps, of several candidates, those that end before the
// next hunk that matches exactly in one place (hunks come in file order;
// context may be shared), if that leaves any.
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

// upper is the line the hunks after k pin down: the start (plus leading
// context, which may be shared) of the first later hunk whose whole old side
// matches exactly in one place at or after lo.
func (p *placer) upper(k, lo int) int {
	for j := k + 1; j < len(p.hunks); j++ {
		if !p.done[j] {
			old, _ := p.hunks[j].sides()
			p.exact[j] = p.c.find(old, 0, len(p.c.text), wsExact)
			p.done[j] = true
		}
		n, at := 0, 0
		for _, s := range p.exact[j] {
			if s >= lo {
				n++
				at = s
			}
		}
		if n == 1 {
			lead, _ := p.hunks[j].context()
			return min(len(p.c.text), at+lead)
		}
	}
	return len(p.c.text)
}

func (p *placer) result(h *hunk, applied bool, c cand) placed {
	start, top, ws := c.start, c.top, c.ws
	ops := h.ops[top : len(h.ops)-c.bot]
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
	return placed{h: h, applied: applied, start: start, end: start + n, ops: ops, top: top,
		trail: trail, fuzz: top + c.bot, ws: ws}
}

// emit builds the new content from the placed hunks (all applied, in
// order). ok is false if two hunks change the same lines.
func emit(c *content, pls []placed) (_ *content, ok bool) {
	out := &content{nl: c.nl}
	add := func(text, eol string) {
		out.text = append(out.text, text)
		out.eol = append(out.eol, eol)
	}
	cur := 0
	lastAdded := -1 // index in out of an added line that must end the file without newline
	for _, pl := range pls {
		ops, at := pl.ops, pl.start
		// Context shared with the previous hunk was copied already.
		for at < cur && len(ops) > 0 && ops[0].kind == ' ' {
			ops, at = ops[1:], at+1
		}
		if at < cur {
			return nil, false
		}
		for ; cur < at; cur++ {
			add(c.text[cur], c.eol[cur])
		}
		lastNew := -1
		for i, o := range ops {
			if o.kind != '-' {
				lastNew = i
			}
		}
		for i, o := range ops {
			switch o.kind {
			case ' ':
				add(c.text[cur], c.eol[cur])
				cur++
			case '-':
				cur++
			case '+':
				add(o.text, c.nl)
				if i == lastNew && pl.h.newNoEOL && pl.fuzz == 0 {
					lastAdded = len(out.text) - 1
				}
			}
		}
	}
	for ; cur < len(c.text); cur++ {
		add(c.text[cur], c.eol[cur])
	}
	// Only the last line may lack a newline, and an added one only when the
	// diff says so.
	for i := range out.eol {
		if out.eol[i] == "" && i < len(out.eol)-1 {
			out.eol[i] = c.nl
		}
	}
	if n := len(out.text); n > 0 && lastAdded == n-1 {
		out.eol[n-1] = ""
	}
	return out, true
}

// hintsHold reports whether every hunk with line numbers sits exactly at
// the line its header gives, old side or (already applied) new side,
// whitespace aside. Only then may line numbers choose between places that
// match equally well: a model's numbers are often off, and a wrong number
// can land right on a repeated block.
func hintsHold(c *content, hunks []*hunk) bool {
	for _, h := range hunks {
		if !h.hasHint {
			continue
		}
		old, new := h.sides()
		if len(old) == 0 || !(matchLoose(c, old, h.oldHint) || matchLoose(c, new, h.newHint)) {
			return false
		}
	}
	return true
}

func matchLoose(c *content, side []string, at int) bool {
	return c.matchAt(side, at, wsExact) || c.matchAt(normalizeAll(side, wsAll), at, wsAll)
}

package patch

import (
	"context"
	"fmt"
	"hash/maphash"
	"io/fs"
	"slices"
	"strings"
	"sync/atomic"
)

// target is one path the diff touches, as it was and as it will be.
type target struct {
	path    string
	existed bool
	orig    []byte
	mode    fs.FileMode
	oldMode fs.FileMode // mode as it was
	links   int         // names the file had (0: unknown)
	size    int64       // bytes it had when looked at
	dirs    []string    // parent directories a create must make
	added   int
	removed int

	exists bool     // after the diff's sections so far
	data   []byte   // the content then, unless pend holds it
	cc     *content // data as lines; see content()
	tmp    string   // its new content, staged (see settle, stage)
	// released: orig, data and pend's content were let go of once staged
	// or checked; sum is orig's hash, to read orig back (original).
	released bool
	sum      uint64
	// pend is the last section's result not yet built: it is built when
	// written, one file at a time, so an apply never holds every file's
	// new content at once, and a check never builds any.
	pend *pending

	// Changes the diff makes without hunks (a mode, an empty file): those
	// it makes, and those in place already, described for a refusal.
	metaDone, metaAlready []string
	notes                 []string
}

// pending is a file's new content as placed hunks on its old content.
type pending struct {
	c     *content
	pls   []placed
	exact bool
	same  bool // the result is the old content
}

// content is the current content as lines, split on first use.
func (t *target) content() *content {
	if t.pend != nil {
		t.set(t.newData())
	}
	if t.cc == nil {
		t.cc = splitContent(t.data)
	}
	return t.cc
}

// hashSeed hashes file contents, to know one read back for what it was.
var hashSeed = maphash.MakeSeed()

// original is the content the file had: in memory, or, once released,
// read back from the backup (from "": the file itself, before anything is
// written) and checked to be what was planned on.
func (t *target) original(tr *tree, from string) ([]byte, error) {
	if !t.released {
		return t.orig, nil
	}
	p := t.path
	if from != "" {
		p = from + "/" + t.path
	}
	b, err := tr.readRegular(p)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != t.size || maphash.Bytes(hashSeed, b) != t.sum {
		return nil, fmt.Errorf("patch: %s changed while the diff was being applied", t.path)
	}
	return b, nil
}

// newData is the content after the diff, built now if it is pending.
func (t *target) newData() []byte {
	if t.pend != nil {
		b, _ := emit(t.pend.c, t.pend.pls, t.pend.exact) // measured ok before
		return b
	}
	return t.data
}

// changed reports whether the content after the diff differs from the
// content before.
func (t *target) changed() bool {
	if t.pend != nil {
		return !t.pend.same
	}
	return string(t.data) != string(t.orig)
}

func (t *target) set(data []byte) { t.exists, t.data, t.cc, t.pend = true, data, nil, nil }

func (t *target) remove() { t.exists, t.data, t.cc, t.pend = false, nil, nil, nil }

func (t *target) op() string {
	switch {
	case t.existed && !t.exists:
		return "delete"
	case !t.existed && t.exists:
		return "create"
	case t.existed:
		return "modify"
	}
	return ""
}

// outcome is what happened to one hunk.
type outcome struct {
	t     *target
	total int // hunks in its file section
	c     *content
	pl    *placed
	fail  *failure
	note  string // a file-level reason the hunk failed
	skip  bool   // placed nowhere: the file it deletes is gone already
}

// hunk is the outcome's hunk: every outcome is placed or failed.
func (o *outcome) hunk() *hunk {
	if o.fail != nil {
		return o.fail.h
	}
	return o.pl.h
}

type planner struct {
	ctx      context.Context // checked before each file: an apply stops when it ends
	tree     *tree
	opt      Options
	detected map[bool]int // strip level found for files with (true) and without a/ b/
	trust    bool         // the diff's line numbers are all right (see hintsHold)
	stats    map[string]lstatResult
	state    map[string]*target
	order    []*target
	out      []outcome
	notes    []string
}

// plan works out every file's new content, or refuses. Files are read
// and their hunks placed in parallel, one goroutine per file; sections
// naming the same file are applied one after the other, in order.
func (p *planner) plan(fds []*fileDiff) error {
	// Files that exist tell the strip level that new files follow, so
	// resolve those first.
	paths := make([]string, len(fds))
	for pass := 0; pass < 2; pass++ {
		for i, f := range fds {
			if f.created != (pass == 1) {
				continue
			}
			if p.ctx.Err() != nil {
				return p.ctx.Err()
			}
			var err error
			if paths[i], err = p.resolve(f); err != nil {
				return err
			}
		}
	}
	groups := map[*target][]int{} // target -> its sections, in order
	for i := range fds {
		t, err := p.target(paths[i])
		if err != nil {
			return err
		}
		groups[t] = append(groups[t], i)
	}

	// Read each file and, when the diff's line numbers hold for it (the
	// usual case), place its hunks at once, so that it can be staged or
	// let go of before most others are read: the whole tree is never in
	// memory. Line numbers may break ties only when they hold for every
	// file (see hintsHold); when one file's do not, the files placed
	// trusting them are placed again without.
	n := len(p.order)
	errs := make([]error, n)
	holds := make([]bool, n)
	trusted := make([]bool, n)
	outs := make([][]outcome, len(fds))
	var broken atomic.Bool
	parallel(n, func(i int) {
		t := p.order[i]
		if testHook != nil {
			testHook("plan", t.path)
		}
		if errs[i] = p.ctx.Err(); errs[i] != nil {
			return
		}
		if errs[i] = p.read(t); errs[i] != nil {
			return
		}
		holds[i] = true
		for _, k := range groups[t] {
			if t.exists && !fds[k].created && !hintsHold(t.content(), fds[k].hunks) {
				holds[i] = false
			}
		}
		if !holds[i] {
			broken.Store(true)
		}
		if broken.Load() {
			return // placed below, not trusting line numbers
		}
		trusted[i] = true
		errs[i] = p.placeTarget(t, groups[t], fds, outs, true)
	})
	if err := firstError(errs); err != nil {
		return err
	}
	p.trust = !slices.Contains(holds, false)
	if !p.trust {
		parallel(n, func(i int) {
			t := p.order[i]
			if errs[i] = p.ctx.Err(); errs[i] != nil {
				return
			}
			if trusted[i] {
				unstage(p.tree, []*target{t})
				t.reset()
				if errs[i] = p.read(t); errs[i] != nil {
					return
				}
			}
			errs[i] = p.placeTarget(t, groups[t], fds, outs, false)
		})
		if err := firstError(errs); err != nil {
			return err
		}
	}
	// Sized first: grown by appending, it made 8 MB of garbage on a
	// 24,000-hunk diff.
	total := 0
	for k := range fds {
		total += len(outs[k])
	}
	p.out = slices.Grow(p.out, total)
	for k := range fds {
		p.out = append(p.out, outs[k]...)
	}
	return p.verdict()
}

// placeTarget places the hunks of t's sections (ks, in order) and then
// settles t.
func (p *planner) placeTarget(t *target, ks []int, fds []*fileDiff, outs [][]outcome, trust bool) error {
	for j, k := range ks {
		var err error
		if outs[k], err = p.applyFile(t, fds[k], j == len(ks)-1, trust); err != nil {
			return err
		}
	}
	for _, k := range ks {
		for _, o := range outs[k] {
			if o.fail != nil {
				return nil // its content stays, for the report
			}
		}
	}
	return p.settle(t, ks, outs)
}

// settle lets go of a placed file's contents: a check needs no more of
// it; an apply stages its new content (written beside it, renamed into
// place later) first. The original stays in memory only when there is no
// backup to restore it from.
func (p *planner) settle(t *target, ks []int, outs [][]outcome) error {
	if t.pend == nil {
		return nil // created, deleted or unchanged: small, or nothing to hold
	}
	if !p.opt.Check {
		if !t.changed() && t.mode == t.oldMode {
			return nil
		}
		if testHook != nil {
			testHook("stage", t.path)
		}
		if err := p.ctx.Err(); err != nil {
			return err
		}
		if err := stageOne(p.tree, t); err != nil {
			return fmt.Errorf("patch: %s: %w", t.path, err)
		}
	}
	for _, k := range ks {
		for x := range outs[k] {
			outs[k][x].c = nil
			if h := outs[k][x].hunk(); h != nil {
				h.old, h.new = nil, nil // built again if ever needed
			}
		}
	}
	t.pend.c, t.pend.pls, t.cc, t.data = nil, nil, nil, nil
	if p.opt.Check || !p.opt.NoBackup {
		// Nothing refers to orig any more (its content, the outcomes'
		// and the pending result's were dropped above; messages are
		// formatted copies): its buffer can hold the next file.
		putBuf(t.orig)
		t.orig, t.released = nil, true
	}
	return nil
}

// reset puts t back as it was before any section was placed (to place
// them again); its content must be read again.
func (t *target) reset() {
	*t = target{path: t.path, existed: t.existed, mode: t.oldMode, oldMode: t.oldMode,
		links: t.links, size: t.size, dirs: t.dirs}
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// target returns the state of path, made on first use (without reading
// the file yet).
func (p *planner) target(path string) (*target, error) {
	if t, ok := p.state[path]; ok {
		return t, nil
	}
	// The path may be a slice of the diff's text, which Apply does not
	// copy (see splitDiffLines): results get their own copy.
	t := &target{path: strings.Clone(path), mode: 0o644}
	r, err := p.lstatFull(path)
	if err != nil {
		return nil, err
	}
	fi, missing := r.fi, r.missing
	if fi != nil {
		t.existed, t.mode, t.links, t.size = true, fi.Mode()&modeBits, links(fi), fi.Size()
		t.oldMode = t.mode
	} else {
		t.dirs = parentsToMake(path, missing)
	}
	p.state[path] = t
	p.order = append(p.order, t)
	return t, nil
}

// read loads an existing target's content.
func (p *planner) read(t *target) error {
	if !t.existed {
		return nil
	}
	if t.size >= maxFileSize {
		return refuse(Unsafe, "%s is %d bytes, too large to patch (the limit is %d)", t.path, t.size, int64(maxFileSize))
	}
	b, err := p.tree.readFile(t.path, t.size)
	if err != nil {
		return fmt.Errorf("patch: %w", err)
	}
	if int64(len(b)) >= maxFileSize {
		return fmt.Errorf("patch: %s grew past %d bytes while being read", t.path, int64(maxFileSize))
	}
	t.orig, t.size = b, int64(len(b))
	t.sum = maphash.Bytes(hashSeed, b)
	t.set(b)
	return nil
}

// maxFileSize bounds the files a diff may change: line offsets are 32-bit.
const maxFileSize = 1<<32 - 1

const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// applyFile places f's hunks on t's current content and says how each
// went. It only touches t, so files can be done in parallel. last: no
// later section changes t, so its new content can wait until written.
func (p *planner) applyFile(t *target, f *fileDiff, last, trust bool) (out []outcome, _ error) {
	fileFail := func(note string) {
		out = out[:0]
		for _, h := range f.hunks {
			out = append(out, outcome{t: t, total: len(f.hunks), fail: &failure{h: h}, note: note})
		}
	}
	already := func(c *content) {
		for _, h := range f.hunks {
			out = append(out, outcome{t: t, total: len(f.hunks), c: c, pl: &placed{h: h, applied: false}, skip: c == nil})
		}
	}
	if f.whole || f.removeAll {
		return p.applyWhole(t, f)
	}
	if len(f.hunks) == 0 {
		return nil, p.headerOnly(t, f)
	}
	created := f.created
	switch {
	case created && t.exists:
		if sameText(t.content(), splitContent(newFile(f))) {
			already(t.content())
			return out, nil
		}
		fileFail(createsExisting(f, t.path))
		return out, nil
	case created:
		for _, h := range f.hunks {
			if nOld, _ := h.counts(); nOld > 0 {
				return nil, refuse(BadDiff, "line %d: the diff creates %s, but hunk %d has lines to remove", h.line, t.path, h.num)
			}
		}
		t.set(newFile(f))
		if f.newMode != 0 {
			t.mode = withExec(0o644, f.newMode)
		}
		at := 0
		for _, h := range f.hunks {
			out = append(out, outcome{t: t, total: len(f.hunks), c: t.content(), pl: &placed{h: h, applied: true, start: at}})
			t.added += len(h.ops)
			at += len(h.ops)
		}
		return out, nil
	case !t.exists && f.deleted:
		already(nil)
		return out, nil
	case !t.exists:
		// Never a create in disguise: a new file says so ("--- /dev/null").
		fileFail(changesMissing(f, t.path))
		return out, nil
	}

	c := t.content()
	pls, fails := placeAll(c, f.hunks, trust)
	if err := cutShort(t.path, pls, fails); err != nil {
		return nil, err
	}
	for i := range pls {
		out = append(out, outcome{t: t, total: len(f.hunks), c: c, pl: &pls[i]})
	}
	for i := range fails {
		out = append(out, outcome{t: t, total: len(f.hunks), c: c, fail: &fails[i]})
	}
	if len(fails) > 0 {
		return out, nil
	}
	for _, pl := range pls {
		if !pl.applied {
			return out, nil // judged with the others in verdict
		}
	}
	size, same, ok := measure(c, pls, f.exact)
	if !ok {
		fileFail(fmt.Sprintf("hunks for %s overlap", t.path))
		return out, nil
	}
	for _, pl := range pls {
		for _, o := range pl.ops {
			switch o.kind {
			case '+':
				t.added++
			case '-':
				t.removed++
			}
		}
	}
	if f.deleted {
		if size > 0 {
			next, _ := emit(c, pls, f.exact)
			fileFail(fmt.Sprintf("the diff deletes %s, but the file has %d lines the diff does not remove", t.path, splitContent(next).n()))
			return out, nil
		}
		t.remove()
		return out, nil
	}
	if last {
		t.pend = &pending{c: c, pls: pls, exact: f.exact, same: same}
	} else {
		next, _ := emit(c, pls, f.exact)
		t.set(next)
	}
	p.chmod(t, f)
	return out, nil
}

// headerOnly makes a change that git writes without hunks: a mode
// change, or a new or deleted empty file.
func (p *planner) headerOnly(t *target, f *fileDiff) error {
	if t.pend != nil {
		t.set(t.newData())
	}
	switch {
	case f.created && t.exists:
		if len(t.data) > 0 {
			return refuse(DoesNotApply, "line %d: the diff creates %s as an empty file, but it exists and is not empty; nothing was changed", f.line, t.path)
		}
		t.metaAlready = append(t.metaAlready, "the empty file "+t.path)
	case f.created:
		t.set(nil)
		t.mode = withExec(0o644, f.newMode)
		t.metaDone = append(t.metaDone, "the empty file "+t.path)
	case f.deleted && !t.exists:
		t.metaAlready = append(t.metaAlready, "the deletion of "+t.path)
	case f.deleted:
		if len(t.data) > 0 {
			return refuse(DoesNotApply, "line %d: the diff deletes %s as an empty file, but it has %d bytes; nothing was changed", f.line, t.path, len(t.data))
		}
		t.remove()
		t.metaDone = append(t.metaDone, "the deletion of "+t.path)
	case !t.exists:
		return refuse(DoesNotApply, "line %d: the diff changes the mode of %s, which does not exist; nothing was changed", f.line, t.path)
	case f.newMode == 0:
		return refuse(BadDiff, "line %d: the diff for %s has no hunks and no new mode", f.line, t.path)
	default:
		before := t.mode
		p.chmod(t, f)
		what := fmt.Sprintf("the mode %06o of %s", f.newMode, t.path)
		if t.mode == before {
			t.metaAlready = append(t.metaAlready, what)
		}
	}
	return nil
}

// chmod makes the mode change f gives ("old mode", "new mode") on an
// existing file, as git does: only the executable bits follow the new
// mode (for whoever may read the file).
func (p *planner) chmod(t *target, f *fileDiff) {
	if f.newMode == 0 || f.created || f.deleted || !t.exists {
		return
	}
	if f.oldMode != 0 && (f.oldMode&0o111 != 0) != (t.mode&0o111 != 0) {
		t.notes = append(t.notes, fmt.Sprintf("%s: the diff says its mode was %06o, but it is %04o; set it to %06o anyway, as git does", t.path, f.oldMode, t.mode&fs.ModePerm, f.newMode))
	}
	before := t.mode
	t.mode = withExec(t.mode, f.newMode)
	if t.mode != before {
		t.metaDone = append(t.metaDone, fmt.Sprintf("the mode %06o of %s", f.newMode, t.path))
	}
}

// withExec is perm with its executable bits set as git mode m says: on
// for whoever may read the file, or off.
func withExec(perm fs.FileMode, m uint32) fs.FileMode {
	if m&0o111 != 0 {
		return perm | (perm&0o444)>>2
	}
	return perm &^ 0o111
}

// newFile is the content a creating diff describes.
// Each line keeps the terminator it has in the diff (CRLF or LF), byte for
// byte.
func newFile(f *fileDiff) []byte {
	var b []byte
	nl := "\n"
	for _, h := range f.hunks {
		for _, o := range h.ops {
			nl = "\n"
			if o.cr {
				nl = "\r\n"
			}
			b = append(b, h.text(o)...)
			b = append(b, nl...)
		}
	}
	if len(b) > 0 && f.hunks[len(f.hunks)-1].newNoEOL {
		b = b[:len(b)-1] // the "\n": a CR before it is the line's own
	}
	return b
}

// verdict refuses unless every hunk applies, or every hunk is already in.
func (p *planner) verdict() error {
	var applied, already, failed int
	for _, o := range p.out {
		switch {
		case o.fail != nil:
			failed++
		case o.pl.applied:
			applied++
		default:
			already++
		}
	}
	if failed > 0 {
		err := refuse(DoesNotApply, "%s", p.report())
		err.Ambiguous = true
		for _, o := range p.out {
			if o.fail != nil && (o.note != "" || o.fail.mixed || len(o.fail.where) < 2) {
				err.Ambiguous = false
			}
		}
		return err
	}
	var done, in []string
	for _, t := range p.order {
		done, in = append(done, t.metaDone...), append(in, t.metaAlready...)
	}
	if (applied > 0 || len(done) > 0) && (already > 0 || len(in) > 0) {
		return refuse(DoesNotApply, "%s", p.partialReport(done, in))
	}
	return nil
}

func (p *planner) alreadyApplied() bool {
	for _, o := range p.out {
		if o.fail != nil || o.pl.applied {
			return false
		}
	}
	in := false
	for _, t := range p.order {
		if len(t.metaDone) > 0 {
			return false
		}
		in = in || len(t.metaAlready) > 0
	}
	return len(p.out) > 0 || in
}

func (p *planner) result() *Result {
	// Sized at once (appending doubled them, leaving the smaller
	// copies as garbage).
	res := &Result{Files: make([]FileResult, 0, len(p.order)), Hunks: make([]HunkResult, 0, len(p.out)), AlreadyApplied: p.alreadyApplied()}
	for _, t := range p.order {
		op := t.op()
		if res.AlreadyApplied {
			op = "" // nothing changes
		}
		if op == "modify" && !t.changed() && t.mode == t.oldMode {
			op = "" // hunks that change nothing, such as a newline at the end
		}
		if op != "" {
			fr := FileResult{Path: t.path, Op: op, Added: t.added, Removed: t.removed}
			if op == "modify" && t.mode != t.oldMode {
				fr.Mode = fmt.Sprintf("%04o", t.mode&fs.ModePerm)
			}
			res.Files = append(res.Files, fr)
		}
		p.notes = append(p.notes, t.notes...)
	}
	for _, o := range p.out {
		pl := o.pl
		if pl == nil || o.skip || (pl.applied == res.AlreadyApplied) {
			continue
		}
		h := pl.h
		at := pl.start - pl.top
		hr := HunkResult{File: o.t.path, Line: at + 1, Fuzz: pl.fuzz, Whitespace: pl.ws != wsExact}
		hint := h.oldHint
		if !pl.applied {
			hint = h.newHint
		}
		if h.hasHint {
			hr.Offset = at - hint
		}
		res.Hunks = append(res.Hunks, hr)
		if hr.Offset != 0 || hr.Fuzz != 0 || hr.Whitespace {
			res.Messages = append(res.Messages, describePlacement(hr, h))
		}
	}
	res.Messages = append(res.Messages, p.notes...)
	if n := len(res.Messages); n > maxMessages {
		res.Messages = append(res.Messages[:maxMessages-1], fmt.Sprintf("and %d more notes like these", n-maxMessages+1))
	}
	return res
}

// maxMessages bounds Result.Messages, which may go into a prompt.
const maxMessages = 20

func describePlacement(hr HunkResult, h *hunk) string {
	var how []string
	if hr.Offset != 0 {
		how = append(how, fmt.Sprintf("offset %+d", hr.Offset))
	}
	if hr.Fuzz != 0 {
		how = append(how, fmt.Sprintf("%d context line(s) ignored", hr.Fuzz))
	}
	if hr.Whitespace {
		how = append(how, "whitespace ignored")
	}
	return fmt.Sprintf("%s: hunk %d applied at line %d (%s)", hr.File, h.num, hr.Line, strings.Join(how, ", "))
}

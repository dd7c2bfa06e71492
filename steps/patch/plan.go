package patch

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// target is one path the diff touches, as it was and as it will be.
type target struct {
	path    string
	existed bool
	orig    []byte
	mode    fs.FileMode
	oldMode fs.FileMode // mode as it was
	links   int         // names the file had (0: unknown)
	dirs    []string    // parent directories a create must make
	added   int
	removed int

	exists bool     // after the diff's sections so far
	data   []byte   // the content then
	cc     *content // data as lines; see content()

	// Changes the diff makes without hunks (a mode, an empty file): those
	// it makes, and those in place already, described for a refusal.
	metaDone, metaAlready []string
	notes                 []string
}

// content is the current content as lines, split on first use.
func (t *target) content() *content {
	if t.cc == nil {
		t.cc = splitContent(t.data)
	}
	return t.cc
}

func (t *target) set(data []byte) { t.exists, t.data, t.cc = true, data, nil }

func (t *target) remove() { t.exists, t.data, t.cc = false, nil, nil }

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
}

// hunk is the outcome's hunk: every outcome is placed or failed.
func (o *outcome) hunk() *hunk {
	if o.fail != nil {
		return o.fail.h
	}
	return o.pl.h
}

type planner struct {
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

	// Read the files and see whether the diff's line numbers hold.
	errs := make([]error, len(p.order))
	holds := make([]bool, len(p.order))
	parallel(len(p.order), func(i int) {
		t := p.order[i]
		if errs[i] = p.read(t); errs[i] != nil {
			return
		}
		holds[i] = true
		for _, k := range groups[t] {
			if t.exists && !fds[k].created && !hintsHold(t.content(), fds[k].hunks) {
				holds[i] = false
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	p.trust = !slices.Contains(holds, false)

	// Place the hunks.
	outs := make([][]outcome, len(fds))
	ferrs := make([]error, len(fds))
	parallel(len(p.order), func(i int) {
		t := p.order[i]
		for _, k := range groups[t] {
			if outs[k], ferrs[k] = p.applyFile(t, fds[k]); ferrs[k] != nil {
				return
			}
		}
	})
	for k := range fds {
		if ferrs[k] != nil {
			return ferrs[k]
		}
		p.out = append(p.out, outs[k]...)
	}
	return p.verdict()
}

// target returns the state of path, made on first use (without reading
// the file yet).
func (p *planner) target(path string) (*target, error) {
	if t, ok := p.state[path]; ok {
		return t, nil
	}
	t := &target{path: path, mode: 0o644}
	r, err := p.lstatFull(path)
	if err != nil {
		return nil, err
	}
	fi, missing := r.fi, r.missing
	if fi != nil {
		t.existed, t.mode, t.links = true, fi.Mode()&modeBits, links(fi)
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
	b, err := p.tree.readFile(t.path)
	if err != nil {
		return fmt.Errorf("patch: %w", err)
	}
	t.orig = b
	t.set(b)
	return nil
}

const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// applyFile places f's hunks on t's current content and says how each
// went. It only touches t, so files can be done in parallel.
func (p *planner) applyFile(t *target, f *fileDiff) (out []outcome, _ error) {
	fileFail := func(note string) {
		out = out[:0]
		for _, h := range f.hunks {
			out = append(out, outcome{t: t, total: len(f.hunks), fail: &failure{h: h}, note: note})
		}
	}
	already := func(c *content) {
		for _, h := range f.hunks {
			out = append(out, outcome{t: t, total: len(f.hunks), c: c, pl: &placed{h: h, applied: false}})
		}
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
		fileFail(fmt.Sprintf("the diff creates %s, but it already exists", t.path))
		return out, nil
	case created:
		for _, h := range f.hunks {
			if old, _ := h.sides(); len(old) > 0 {
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
		fileFail(fmt.Sprintf("%s does not exist, and the diff changes it rather than creating it (a new file's old name is /dev/null: \"--- /dev/null\")", t.path))
		return out, nil
	}

	c := t.content()
	pls, fails := placeAll(c, f.hunks, p.trust)
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
	next, ok := emit(c, pls, f.exact)
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
		if len(next) > 0 {
			fileFail(fmt.Sprintf("the diff deletes %s, but the file has %d lines the diff does not remove", t.path, splitContent(next).n()))
			return out, nil
		}
		t.remove()
		return out, nil
	}
	t.set(next)
	p.chmod(t, f)
	return out, nil
}

// headerOnly makes a change that git writes without hunks: a mode
// change, or a new or deleted empty file.
func (p *planner) headerOnly(t *target, f *fileDiff) error {
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
			b = append(b, o.text...)
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
	res := &Result{Files: []FileResult{}, Hunks: []HunkResult{}, AlreadyApplied: p.alreadyApplied()}
	for _, t := range p.order {
		op := t.op()
		if res.AlreadyApplied {
			op = "" // nothing changes
		}
		if op == "modify" && string(t.data) == string(t.orig) && t.mode == t.oldMode {
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
		if pl == nil || o.c == nil || (pl.applied == res.AlreadyApplied) {
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

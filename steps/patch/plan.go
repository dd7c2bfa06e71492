package patch

import (
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// target is one path the diff touches, as it was and as it will be.
type target struct {
	path    string
	existed bool
	orig    []byte
	mode    fs.FileMode
	cur     *content // after the diff's sections so far; nil = absent
	data    []byte   // cur as bytes, once planned
	dirs    []string // parent directories a create must make
	added   int
	removed int
}

func (t *target) op() string {
	switch {
	case t.existed && t.cur == nil:
		return "delete"
	case !t.existed && t.cur != nil:
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

type planner struct {
	root     *os.Root
	opt      Options
	detected map[bool]int    // strip level found for files with (true) and without a/ b/
	trust    bool            // the diff's line numbers are all right (see hintsHold)
	dirs     map[string]bool // directories found real while planning
	state    map[string]*target
	order    []*target
	out      []outcome
	notes    []string
}

// plan works out every file's new content, or refuses.
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
	ts := make([]*target, len(fds))
	p.trust = true
	for i, f := range fds {
		t, err := p.load(paths[i])
		if err != nil {
			return err
		}
		ts[i] = t
		if t.cur != nil && !f.created && !hintsHold(t.cur, f.hunks) {
			p.trust = false
		}
	}
	for i, f := range fds {
		if err := p.applyFile(ts[i], f); err != nil {
			return err
		}
	}
	return p.verdict()
}

// load returns the state of path, reading it on first use.
func (p *planner) load(path string) (*target, error) {
	if t, ok := p.state[path]; ok {
		return t, nil
	}
	t := &target{path: path, mode: 0o644}
	fi, missing, err := lstatCached(p.root, path, p.dirs)
	if err != nil {
		return nil, err
	}
	if fi != nil {
		b, err := p.root.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("patch: %w", err)
		}
		t.existed, t.orig, t.mode, t.cur = true, b, fi.Mode()&modeBits, splitContent(b)
	} else {
		t.dirs = parentsToMake(path, missing)
	}
	p.state[path] = t
	p.order = append(p.order, t)
	return t, nil
}

const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// applyFile places f's hunks on t's current content.
func (p *planner) applyFile(t *target, f *fileDiff) error {
	fileFail := func(note string) {
		for _, h := range f.hunks {
			p.out = append(p.out, outcome{t: t, total: len(f.hunks), fail: &failure{h: h}, note: note})
		}
	}
	already := func(c *content) {
		for _, h := range f.hunks {
			p.out = append(p.out, outcome{t: t, total: len(f.hunks), c: c, pl: &placed{h: h, applied: false}})
		}
	}
	created := f.created
	if !created && t.cur == nil && !f.deleted && allBare(f) {
		created = true // a new file written as a change to an empty one
	}
	switch {
	case created && t.cur != nil:
		want := newFile(f)
		if slices.Equal(t.cur.text, want.text) {
			already(t.cur)
			return nil
		}
		fileFail(fmt.Sprintf("the diff creates %s, but it already exists", t.path))
		return nil
	case created:
		for _, h := range f.hunks {
			if old, _ := h.sides(); len(old) > 0 {
				return refuse(BadDiff, "line %d: the diff creates %s, but hunk %d has lines to remove", h.line, t.path, h.num)
			}
		}
		t.cur = newFile(f)
		if f.mode != 0 {
			t.mode = f.mode
		}
		at := 0
		for _, h := range f.hunks {
			p.out = append(p.out, outcome{t: t, total: len(f.hunks), c: t.cur, pl: &placed{h: h, applied: true, start: at}})
			t.added += len(h.ops)
			at += len(h.ops)
		}
		return nil
	case t.cur == nil && f.deleted:
		already(nil)
		return nil
	case t.cur == nil:
		fileFail(fmt.Sprintf("%s does not exist", t.path))
		return nil
	}

	pls, fails := placeAll(t.cur, f.hunks, p.trust)
	c := t.cur
	for i := range pls {
		p.out = append(p.out, outcome{t: t, total: len(f.hunks), c: c, pl: &pls[i]})
	}
	for i := range fails {
		p.out = append(p.out, outcome{t: t, total: len(f.hunks), c: c, fail: &fails[i]})
	}
	if len(fails) > 0 {
		return nil
	}
	for _, pl := range pls {
		if !pl.applied {
			return nil // judged with the others in verdict
		}
	}
	next, ok := emit(c, pls)
	if !ok {
		fileFail(fmt.Sprintf("hunks for %s overlap", t.path))
		return nil
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
		if len(next.text) > 0 {
			fileFail(fmt.Sprintf("the diff deletes %s, but the file has %d lines the diff does not remove", t.path, len(next.text)))
			return nil
		}
		next = nil
	}
	t.cur = next
	return nil
}

func allBare(f *fileDiff) bool {
	for _, h := range f.hunks {
		if old, _ := h.sides(); len(old) > 0 {
			return false
		}
	}
	return true
}

// newFile is the content a creating diff describes.
func newFile(f *fileDiff) *content {
	c := &content{nl: "\n"}
	cr := 0
	for _, h := range f.hunks {
		for _, o := range h.ops {
			if o.cr {
				cr++
			}
			c.text = append(c.text, o.text)
		}
	}
	if cr*2 > len(c.text) {
		c.nl = "\r\n"
	}
	for range c.text {
		c.eol = append(c.eol, c.nl)
	}
	if n := len(c.eol); n > 0 && f.hunks[len(f.hunks)-1].newNoEOL {
		c.eol[n-1] = ""
	}
	return c
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
	if applied > 0 && already > 0 {
		return refuse(DoesNotApply, "%s", p.partialReport())
	}
	return nil
}

func (p *planner) alreadyApplied() bool {
	for _, o := range p.out {
		if o.fail != nil || o.pl.applied {
			return false
		}
	}
	return len(p.out) > 0
}

func (p *planner) result() *Result {
	res := &Result{Files: []FileResult{}, Hunks: []HunkResult{}, AlreadyApplied: p.alreadyApplied()}
	for _, t := range p.order {
		op := t.op()
		if res.AlreadyApplied {
			op = "" // nothing changes
		}
		if t.cur != nil {
			t.data = t.cur.bytes()
		}
		if op == "modify" && string(t.data) == string(t.orig) {
			op = "" // hunks that change nothing, such as a newline at the end
		}
		if op != "" {
			res.Files = append(res.Files, FileResult{Path: t.path, Op: op, Added: t.added, Removed: t.removed})
		}
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

package patch

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/sourcegraph/go-diff/diff"
)

// fileDiff is one file's changes, ready to place.
type fileDiff struct {
	line             int    // of its header in the diff text
	oldName, newName string // unquoted, not yet stripped
	created, deleted bool   // one side is /dev/null
	// oldMode and newMode are git's modes from the extended headers
	// (0o100644, 0o100755), 0 where the diff gives none: "old mode" and
	// "new mode" change one, "new file mode" and "deleted file mode" give
	// one side's.
	oldMode, newMode uint32
	// exact: some hunk line carries its own CR, so the diff says which
	// terminator each line has and is applied byte for byte; otherwise
	// added lines take the file's terminator.
	exact bool
	hunks []*hunk

	// Set for the other edit formats (formats.go).
	format    string // the format the section came from; "" unified
	literal   bool   // its path is as written: no a/ b/ to strip
	whole     bool   // body is the file's whole new content (whole.go)
	body      []byte
	bodyLine  int  // the answer's line of body's first line
	removeAll bool // delete the file whatever it holds (apply_patch)
}

type hunk struct {
	num              int // 1-based, within its file
	line             int // of its header in the diff text
	header           string
	hasHint          bool
	oldHint, newHint int // 0-based line where each side starts
	ops              []op
	oldNoEOL         bool // the old side's last line has no newline
	newNoEOL         bool
	old, new         []string // the sides, once computed
	// cutAt, when not 0, is the answer's line that ends this hunk without
	// a newline: a context line that may be cut short (see lastHunk), so
	// the hunk must be placed with that line matched.
	cutAt int
	// format: the edit format the hunk came from ("" unified), for how a
	// refusal names it. reindent: a place found only with whitespace
	// ignored must differ from the hunk by one indentation shift, which
	// is then made on its added lines too (see reindent), or the hunk is
	// refused.
	format   string
	reindent bool
	// src is the text the ops point into: the diff's, shared by all its
	// hunks (no copy); own holds the texts that are not in src (lines
	// made while reading other formats, or re-indented). own is only ever
	// appended to, so a text read from it never changes.
	src string
	own []byte
}

// text is the text of one of h's ops.
func (h *hunk) text(o op) string {
	if o.n == 0 {
		return ""
	}
	if o.own {
		return unsafe.String(&h.own[o.off], int(o.n))
	}
	return h.src[o.off : o.off+o.n]
}

// ref is an op of kind whose text is text: a place in h.src when text is
// a piece of it, else a copy in h.own.
func (h *hunk) ref(kind byte, text string, cr bool) op {
	if off, ok := within(h.src, text); ok {
		return op{off: uint32(off), n: uint32(len(text)), kind: kind, cr: cr}
	}
	off := len(h.own)
	h.own = append(h.own, text...)
	return op{off: uint32(off), n: uint32(len(text)), kind: kind, cr: cr, own: true}
}

// add appends an op to h.
func (h *hunk) add(kind byte, text string, cr bool) {
	h.ops = append(h.ops, h.ref(kind, text, cr))
}

// within reports where s lies in src, if it is a piece of src's memory.
func within(src, s string) (int, bool) {
	if len(s) == 0 {
		return 0, true
	}
	if len(s) > len(src) || uint64(len(src)) > math.MaxUint32 {
		return 0, false
	}
	b := uintptr(unsafe.Pointer(unsafe.StringData(src)))
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	if p < b || p-b > uintptr(len(src)-len(s)) {
		return 0, false
	}
	return int(p - b), true
}

// op is one line of a hunk. Its text is not a string of its own but a
// place in its hunk's text (see hunk.text): a large diff has hundreds of
// thousands of lines, and ops holding no pointers are half the size and
// nothing for the garbage collector to scan.
type op struct {
	off, n uint32 // the text: src[off:off+n], or own's when own
	kind   byte   // ' ', '-' or '+'
	cr     bool   // the diff line ended in CR
	own    bool   // the text is in the hunk's own buffer
}

const devNull = "/dev/null"

// parse turns the text of a diff (possibly wrapped in prose and fences)
// into fileDiffs. The scanner repairs and canonicalizes; go-diff reads the
// result; the two readings must agree line for line, so a line can never be
// dropped silently. Where go-diff is known to read the canonical text as
// written (see directOK), the second reading is built from the scanner's
// lines directly and checked the same way, which saves most of the time.
func parse(text []byte, maxHunks int) ([]*fileDiff, []string, error) {
	return parseCtx(context.Background(), text, maxHunks, false)
}

// parseCtx is parse, stopping when ctx ends; ended is Options.Ended.
func parseCtx(ctx context.Context, text []byte, maxHunks int, ended bool) ([]*fileDiff, []string, error) {
	all, err := splitDiffLines(text)
	if err != nil {
		return nil, nil, err
	}
	lines, closed := selectDiff(all)
	endNL := len(text) > 0 && text[len(text)-1] == '\n'
	secs, notes, err := scan(ctx, lines, closed, endNL, ended, maxHunks)
	if err != nil {
		return nil, nil, err
	}
	if len(secs) == 0 {
		return nil, nil, refuse(BadDiff, "no diff found: expected a unified diff, with \"--- a/PATH\" and \"+++ b/PATH\" lines, then hunks starting with \"@@\"")
	}
	// go-diff reads the sections in a few chunks at once.
	chunks := chunk(secs, 4)
	outs := make([][]*fileDiff, len(chunks))
	errs := make([]error, len(chunks))
	// The scanner's lines are pieces of text: the ops point into it.
	src := unsafe.String(unsafe.SliceData(text), len(text))
	parallel(len(chunks), func(i int) { outs[i], errs[i] = parseChunk(chunks[i], src) })
	var out []*fileDiff
	if ctx.Err() != nil {
		return nil, nil, stopped(ctx, "while reading the diff")
	}
	for i := range chunks {
		if errs[i] != nil {
			return nil, nil, errs[i]
		}
		out = append(out, outs[i]...)
	}
	return out, notes, nil
}

// chunk splits secs into at most n runs of about equal size.
func chunk(secs []*section, n int) [][]*section {
	total := 0
	for _, s := range secs {
		total += len(s.hunks) + 1
	}
	var out [][]*section
	start, size := 0, 0
	for i, s := range secs {
		size += len(s.hunks) + 1
		if size*n >= total*(len(out)+1) || i == len(secs)-1 {
			out = append(out, secs[start:i+1])
			start = i + 1
		}
	}
	return out
}

func parseChunk(secs []*section, src string) ([]*fileDiff, error) {
	if directOK(secs) {
		return parseDirect(secs, src)
	}
	// Sections without hunks (mode changes, empty files) have names read
	// from their "diff --git" line already; go-diff reads the others.
	var withHunks []*section
	for _, sec := range secs {
		if !sec.headerOnly {
			withHunks = append(withHunks, sec)
		}
	}
	if len(withHunks) < len(secs) {
		read, err := parseChunk(withHunks, src)
		if err != nil {
			return nil, err
		}
		out := make([]*fileDiff, 0, len(secs))
		for _, sec := range secs {
			if sec.headerOnly {
				f, err := parseDirect([]*section{sec}, src)
				if err != nil {
					return nil, err
				}
				out = append(out, f[0])
				continue
			}
			out, read = append(out, read[0]), read[1:]
		}
		return out, nil
	}
	if len(secs) == 0 {
		return nil, nil
	}
	fds, err := diff.ParseMultiFileDiffOptions(canonical(secs), diff.ParseOptions{KeepCR: true})
	if err != nil {
		return nil, refuse(BadDiff, "cannot read the diff: %v", err)
	}
	if len(fds) != len(secs) {
		return nil, refuse(BadDiff, "cannot read the diff: found %d files, expected %d", len(fds), len(secs))
	}
	out := make([]*fileDiff, len(secs))
	for i, sec := range secs {
		if out[i], err = convert(sec, fds[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func convert(sec *section, fd *diff.FileDiff) (*fileDiff, error) {
	f := &fileDiff{line: sec.line, oldName: fd.OrigName, newName: fd.NewName}
	if err := f.fileHeader(sec); err != nil {
		return nil, err
	}
	if len(fd.Hunks) != len(sec.hunks) {
		return nil, refuse(BadDiff, "line %d: cannot read the hunks of %s consistently", sec.line, sec.newName)
	}
	for i, gh := range fd.Hunks {
		sh := sec.hunks[i]
		h, err := convertHunk(gh)
		if err != nil {
			return nil, refuse(BadDiff, "line %d: %v", sh.line, err)
		}
		if !sameBody(h, sh) {
			return nil, refuse(BadDiff, "line %d: cannot read hunk %q consistently", sh.line, sh.header)
		}
		h.num, h.line, h.header, h.hasHint, h.cutAt = i+1, sh.line, sh.header, sh.hasHint, sh.cutAt
		h.oldHint = hintPos(sh.oldStart, sh.nOld)
		h.newHint = hintPos(sh.newStart, sh.nNew)
		f.hunks = append(f.hunks, h)
	}
	f.exact = hasCR(f.hunks)
	return f, nil
}

// hasCR reports whether any hunk line carries its own CR.
func hasCR(hunks []*hunk) bool {
	for _, h := range hunks {
		for _, o := range h.ops {
			if o.cr {
				return true
			}
		}
	}
	return false
}

// fileHeader sets what the file header and git's extended headers say,
// once the names are set.
func (f *fileDiff) fileHeader(sec *section) error {
	f.created = f.oldName == devNull
	f.deleted = f.newName == devNull
	if f.created && f.deleted {
		return refuse(BadDiff, "line %d: both sides of the file header are /dev/null", sec.line)
	}
	for _, x := range sec.ext {
		if strings.HasPrefix(x, "rename from ") || strings.HasPrefix(x, "copy from ") {
			return refuse(BadDiff, "line %d: renames and copies are not supported; delete the old file and create the new one instead", sec.line)
		}
		for _, m := range [...]struct {
			prefix string
			side   *uint32
		}{{"old mode ", &f.oldMode}, {"new mode ", &f.newMode}, {"new file mode ", &f.newMode}, {"deleted file mode ", &f.oldMode}} {
			if v, ok := strings.CutPrefix(x, m.prefix); ok {
				mode, err := gitMode(v)
				if err != nil {
					return refuse(BadDiff, "line %d: %q: %v", sec.line, x, err)
				}
				*m.side = mode
			}
		}
		switch {
		case strings.HasPrefix(x, "new file mode "):
			f.created = true
		case strings.HasPrefix(x, "deleted file mode "):
			f.deleted = true
		}
	}
	if f.created && f.deleted {
		return refuse(BadDiff, "line %d: the file is both created and deleted", sec.line)
	}
	return nil
}

// gitMode reads a mode from git's extended headers. Only regular files
// are supported: a symbolic link (120000) could point anywhere, outside
// the directory too, and is refused rather than written as a regular file
// holding its target; so are submodules (gitlinks, 160000).
func gitMode(v string) (uint32, error) {
	m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
	switch {
	case err != nil:
		return 0, fmt.Errorf("not an octal file mode")
	case m == 0o120000:
		return 0, fmt.Errorf("symbolic links are not supported: the diff may not create, change or delete a link (a link can point outside the directory); write a regular file instead")
	case m == 0o160000:
		return 0, fmt.Errorf("submodules (gitlinks, mode 160000) are not supported")
	case m == 0o100644 || m == 0o100755 || m == 0o100664:
		return uint32(m), nil
	}
	return 0, fmt.Errorf("mode %06o is not a regular file's; only 100644 and 100755 are supported", m)
}

// hintPos turns a header's start line into a 0-based position. An empty
// side's start names the line after which it goes.
func hintPos(start, count int) int {
	if count == 0 || start == 0 {
		return start
	}
	return start - 1
}

// convertHunk reads a go-diff hunk body. A body not ending in "\n" means
// its last line had no newline; OrigNoNewlineAt marks a removed line that
// had none.
func convertHunk(gh *diff.Hunk) (*hunk, error) {
	body := string(gh.Body)
	h := &hunk{src: body}
	pos := 0
	for len(body) > 0 {
		line, rest, nl := strings.Cut(body, "\n")
		o, err := bodyOp(h, line)
		if err != nil {
			return nil, err
		}
		h.ops = append(h.ops, o)
		pos += len(line)
		if nl {
			pos++
		} else if o.kind != '-' {
			h.newNoEOL = true
			h.oldNoEOL = h.oldNoEOL || o.kind == ' '
		}
		if o.kind == '-' && gh.OrigNoNewlineAt > 0 && int(gh.OrigNoNewlineAt) == pos {
			h.oldNoEOL = true
		}
		body = rest
	}
	return h, nil
}

func sameBody(h *hunk, sh *scanHunk) bool {
	i := 0
	for x := range sh.bodyLen() {
		l := sh.bodyAt(x)
		if l == `\` {
			continue
		}
		if i >= len(h.ops) {
			return false
		}
		o := h.ops[i]
		want := l[1:]
		if o.cr {
			if !strings.HasSuffix(want, "\r") {
				return false
			}
			want = want[:len(want)-1]
		}
		if l[0] != o.kind || want != h.text(o) {
			return false
		}
		i++
	}
	return i == len(h.ops)
}

// reverse makes f undo itself.
func (f *fileDiff) reverse() {
	f.oldName, f.newName = f.newName, f.oldName
	f.oldMode, f.newMode = f.newMode, f.oldMode
	f.created, f.deleted = f.deleted, f.created
	for _, h := range f.hunks {
		h.oldHint, h.newHint = h.newHint, h.oldHint
		h.oldNoEOL, h.newNoEOL = h.newNoEOL, h.oldNoEOL
		h.old, h.new = nil, nil
		for i := range h.ops {
			switch h.ops[i].kind {
			case '-':
				h.ops[i].kind = '+'
			case '+':
				h.ops[i].kind = '-'
			}
		}
	}
}

// sides returns the hunk's old and new lines. They are shared: callers
// must not change them.
func (h *hunk) sides() (old, new []string) {
	if h.old == nil && h.new == nil {
		nOld, nNew := h.counts()
		both := make([]string, nOld+nNew) // one allocation for the two
		h.old, h.new = both[:0:nOld], both[nOld:nOld]
		for _, o := range h.ops {
			if o.kind != '+' {
				h.old = append(h.old, h.text(o))
			}
			if o.kind != '-' {
				h.new = append(h.new, h.text(o))
			}
		}
	}
	return h.old, h.new
}

// counts returns how many lines each side of the hunk has.
func (h *hunk) counts() (nOld, nNew int) {
	for _, o := range h.ops {
		if o.kind != '+' {
			nOld++
		}
		if o.kind != '-' {
			nNew++
		}
	}
	return nOld, nNew
}

// context returns how many context lines lead and trail the hunk.
func (h *hunk) context() (lead, trail int) {
	for lead < len(h.ops) && h.ops[lead].kind == ' ' {
		lead++
	}
	for trail < len(h.ops)-lead && h.ops[len(h.ops)-1-trail].kind == ' ' {
		trail++
	}
	return lead, trail
}

// directOK reports whether go-diff would read the canonical text of secs
// exactly as the scanner wrote it: names it takes verbatim (strconv.Unquote
// fails on them) and no body line starting with "---" followed by one
// starting with "+++", which go-diff may take for the next file's header
// (the line after a hunk's last line is "@@", "--- " or the end, which it
// never takes for one). For such sections parseDirect gives the
// same fileDiffs as go-diff and convert, without a second parse; other
// chunks go through go-diff, so its refusals stay as they were.
func directOK(secs []*section) bool {
	for _, sec := range secs {
		for _, name := range []string{sec.oldName, sec.newName} {
			if name == "" || name[0] == '"' || name[0] == '\'' || name[0] == '`' {
				return false
			}
		}
		for _, h := range sec.hunks {
			for x := range h.bodyLen() {
				if strings.HasPrefix(h.bodyAt(x), "---") && x+1 < h.bodyLen() && strings.HasPrefix(h.bodyAt(x+1), "+++") {
					return false
				}
			}
		}
	}
	return true
}

// parseDirect builds the fileDiffs straight from the scanner's canonical
// bodies, as convert would from go-diff's reading of them. The body lines
// map one to one onto ops (markers aside), and the result is still checked
// against the scanner's reading line by line (sameBody) and by count, so no
// line can be dropped silently.
func parseDirect(secs []*section, src string) ([]*fileDiff, error) {
	// The files, hunks and ops of the chunk are each made in one
	// allocation: a diff has hundreds of thousands of lines in tens of
	// thousands of hunks, and one small allocation each was most of the
	// parse's time (fresh spans to clear, objects for the collector).
	nh, nl := 0, 0
	for _, sec := range secs {
		nh += len(sec.hunks)
		for _, sh := range sec.hunks {
			nl += sh.bodyLen()
		}
	}
	files := make([]fileDiff, len(secs))
	hunks := make([]hunk, nh)
	hptrs := make([]*hunk, nh)
	ops := make([]op, nl)
	out := make([]*fileDiff, len(secs))
	for i, sec := range secs {
		f := &files[i]
		*f = fileDiff{line: sec.line, oldName: sec.oldName, newName: sec.newName}
		if err := f.fileHeader(sec); err != nil {
			return nil, err
		}
		f.hunks, hptrs = hptrs[:0:len(sec.hunks)], hptrs[len(sec.hunks):]
		for k, sh := range sec.hunks {
			h := &hunks[0]
			hunks = hunks[1:]
			h.src = src
			h.ops, ops = ops[:0:sh.bodyLen()], ops[sh.bodyLen():]
			err := directHunk(h, sh)
			if err != nil {
				return nil, refuse(BadDiff, "line %d: %v", sh.line, err)
			}
			if !sameBody(h, sh) || !sameCounts(h, sh) {
				return nil, refuse(BadDiff, "line %d: cannot read hunk %q consistently", sh.line, sh.header)
			}
			h.num, h.line, h.header, h.hasHint, h.cutAt = k+1, sh.line, sh.header, sh.hasHint, sh.cutAt
			h.oldHint = hintPos(sh.oldStart, sh.nOld)
			h.newHint = hintPos(sh.newStart, sh.nNew)
			f.hunks = append(f.hunks, h)
		}
		f.exact = hasCR(f.hunks)
		out[i] = f
	}
	return out, nil
}

// directHunk reads a canonical hunk body into h as convertHunk reads
// go-diff's: a marker after a removed line means the old side's last line
// has no newline; after any other line (the body's last, see
// checkMarkers) the new side's, and the old side's too if that line is
// context. h.ops has room for the body's lines.
func directHunk(h *hunk, sh *scanHunk) error {
	n := sh.bodyLen()
	for x := range n {
		l := sh.bodyAt(x)
		if l == `\` {
			if x == 0 || sh.bodyAt(x-1) == `\` {
				return fmt.Errorf("misplaced no-newline marker")
			}
			switch prev := h.ops[len(h.ops)-1]; prev.kind {
			case '-':
				h.oldNoEOL = true
			default:
				if x != n-1 {
					return fmt.Errorf("misplaced no-newline marker")
				}
				h.newNoEOL = true
				h.oldNoEOL = h.oldNoEOL || prev.kind == ' '
			}
			continue
		}
		o, err := bodyOp(h, l)
		if err != nil {
			return err
		}
		h.ops = append(h.ops, o)
	}
	return nil
}

// bodyOp reads one line of a hunk body (without its newline) as an op,
// the same way whether the hunk came through go-diff or straight from the
// scanner.
func bodyOp(h *hunk, line string) (op, error) {
	if line == "" {
		return op{}, fmt.Errorf("empty line in hunk body")
	}
	switch line[0] {
	case ' ', '-', '+':
		text, cr := strings.CutSuffix(line[1:], "\r")
		return h.ref(line[0], text, cr), nil
	}
	return op{}, fmt.Errorf("bad hunk line %q", line)
}

// sameCounts reports whether h has as many lines on each side as the
// scanner counted.
func sameCounts(h *hunk, sh *scanHunk) bool {
	o, n := 0, 0
	for _, op := range h.ops {
		if op.kind != '+' {
			o++
		}
		if op.kind != '-' {
			n++
		}
	}
	return o == sh.nOld && n == sh.nNew
}

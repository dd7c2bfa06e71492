package patch

// emit builds the new file from the placed hunks (all applied, in
// order). Unchanged stretches are copied from the file as they are,
// context lines keep their own terminators, added lines get the file's.
// With exact (the diff carries CRs), an added line keeps the terminator it
// has in the diff instead.
// ok is false if two hunks change the same lines.
func emit(c *content, pls []placed, exact bool) (_ []byte, ok bool) {
	return emitInto(nil, c, pls, exact)
}

// emitInto is emit appending to buf[:0], which it grows if needed.
func emitInto(buf []byte, c *content, pls []placed, exact bool) (_ []byte, ok bool) {
	extra := 0
	for _, pl := range pls {
		for _, o := range pl.ops {
			extra += int(o.n) + 2
		}
	}
	if need := len(c.data) + extra; cap(buf) < need {
		buf = make([]byte, 0, need)
	}
	s := sink{buf: buf[:0], build: true}
	ok = walk(c, pls, exact, &s)
	return s.buf, ok
}

// measure walks the hunks as emit does without building the result: the
// new file's size, whether it is the same as the old, and whether two
// hunks change the same lines. This is all a check needs.
func measure(c *content, pls []placed, exact bool) (size int, same, ok bool) {
	s := sink{same: true, old: c.data}
	ok = walk(c, pls, exact, &s)
	return s.n, s.same && s.n == len(c.data), ok
}

// sink takes the new file's pieces: it appends them (build), or only
// counts them and compares them with the old file.
type sink struct {
	build bool
	buf   []byte
	n     int
	same  bool
	old   string
}

func (s *sink) add(p string) {
	if s.build {
		s.buf = append(s.buf, p...)
		return
	}
	if s.same {
		s.same = s.n+len(p) <= len(s.old) && s.old[s.n:s.n+len(p)] == p
	}
	s.n += len(p)
}

func walk(c *content, pls []placed, exact bool, s *sink) bool {
	// open: the output ends with a line without newline. Only the last
	// line may be one, so if anything follows it gets the file's newline.
	open := false
	put := func(text, end string, noEOL bool) {
		if open && len(text)+len(end) > 0 {
			s.add(c.nl)
		}
		s.add(text)
		s.add(end)
		if len(text)+len(end) > 0 {
			open = noEOL
		}
	}
	lines := func(from, to int) { // lines [from, to) as they are
		put(c.data[c.start(from):c.start(to)], "", to == c.n() && c.openEnd())
	}
	cur := 0
	for _, pl := range pls {
		ops, at := pl.ops, pl.start
		// Context shared with the previous hunk was copied already.
		for at < cur && len(ops) > 0 && ops[0].kind == ' ' {
			ops, at = ops[1:], at+1
		}
		if at < cur {
			return false
		}
		lines(cur, at)
		cur = at
		lastNew := -1
		for i, o := range ops {
			if o.kind != '-' {
				lastNew = i
			}
		}
		for i, o := range ops {
			switch o.kind {
			case ' ':
				lines(cur, cur+1)
				cur++
			case '-':
				cur++
			case '+':
				nl, cr := c.nl, ""
				if exact {
					nl = "\n"
					if o.cr {
						nl, cr = "\r\n", "\r"
					}
				}
				// Without a newline only where the diff says so.
				if i == lastNew && (pl.h.newNoEOL || pl.keepOpen) && pl.fuzz == 0 {
					put(pl.h.text(o), cr, true)
				} else {
					put(pl.h.text(o), nl, false)
				}
			}
		}
	}
	lines(cur, c.n())
	return true
}

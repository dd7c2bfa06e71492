package patch

// emit builds the new file from the placed hunks (all applied, in
// order). Unchanged stretches are copied from the file as they are,
// context lines keep their own terminators, added lines get the file's.
// With exact (the diff carries CRs), an added line keeps the terminator it
// has in the diff instead.
// ok is false if two hunks change the same lines.
func emit(c *content, pls []placed, exact bool) (_ []byte, ok bool) {
	extra := 0
	for _, pl := range pls {
		for _, o := range pl.ops {
			extra += len(o.text) + 2
		}
	}
	buf := make([]byte, 0, len(c.data)+extra)
	// open: buf ends with a line without newline. Only the last line may
	// be one, so if anything follows it gets the file's newline.
	open := false
	put := func(s, end string, noEOL bool) {
		if open && len(s)+len(end) > 0 {
			buf = append(buf, c.nl...)
		}
		buf = append(buf, s...)
		buf = append(buf, end...)
		if len(s)+len(end) > 0 {
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
			return nil, false
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
				// Without a newline only where the diff says so.
				nl, cr := c.nl, ""
				if exact {
					nl = "\n"
					if o.cr {
						nl, cr = "\r\n", "\r"
					}
				}
				if i == lastNew && pl.h.newNoEOL && pl.fuzz == 0 {
					put(o.text+cr, "", true)
				} else {
					put(o.text, nl, false)
				}
			}
		}
	}
	lines(cur, c.n())
	return buf, true
}

package board

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
)

// A large saved run is read a part at a time: its layout found in one
// pass over the file (a buffer's worth held), then each batch of lines
// read as it is decoded. Read whole, a 100k-step run's file (72 MB) was
// held beside the board built from it, the height of a resume. A file
// read so that does not decode is read again whole, the plain way, whose
// errors say where (line and column) and what.

// text is a saved run's file as the decoder reads it: whole in memory,
// or the part of it read last.
type text struct {
	whole bool
	data  []byte // the file, when whole
	f     *os.File
	size  int
	part  []byte // the part read last, from offset at
	at    int

	mu  sync.Mutex
	err error // the first read to fail
}

func wholeText(data []byte) *text { return &text{whole: true, data: data, size: len(data)} }

// bytes is the file's [lo, hi): of the part read when it holds them, else
// read on their own.
func (t *text) bytes(lo, hi int) []byte {
	if t.whole {
		return t.data[lo:hi]
	}
	if lo >= t.at && hi <= t.at+len(t.part) {
		return t.part[lo-t.at : hi-t.at]
	}
	b := make([]byte, hi-lo)
	if _, err := t.f.ReadAt(b, int64(lo)); err != nil {
		t.mu.Lock()
		if t.err == nil {
			t.err = err
		}
		t.mu.Unlock()
	}
	return b
}

// read makes the file's [lo, hi) the part read, in a buffer of its own:
// what the board keeps of a part (a blob's text) keeps that part alone.
func (t *text) read(lo, hi int) {
	if !t.whole {
		t.part, t.at = nil, 0
		t.part, t.at = t.bytes(lo, hi), lo
	}
}

// lines makes list k's lines [i, j) the part read.
func (t *text) lines(l *layout, k, i, j int) {
	if i >= j {
		return
	}
	hi := l.list[k].hi
	if j < len(l.at[k]) {
		hi = l.at[k][j]
	}
	t.read(l.at[k][i], hi)
}

// lineError names a record that does not decode, and where it is in the
// file: a syntax error's offset is the line's, not the file's. Read in
// parts, the file is read again whole for the error (load), so this one
// says what alone.
func (t *text) lineError(lo int, what string, err error) error {
	if !t.whole {
		return fmt.Errorf("%s: %w", what, err)
	}
	return lineErrorAt(t.data, lo, what, err)
}

// headMax is as much of a line as the layout's scan looks at: the names
// of the lists and the run's line's start.
const headMax = 24

// layoutScan finds the layout a line at a time (scanLayout, scanFile):
// head and tail are the line's first bytes (up to headMax) and its last
// two; last says no newline ends it.
type layoutScan struct {
	l         layout
	cur, next int
}

func (s *layoutScan) line(pos, end int, head, tail []byte, last bool) {
	l, n := &s.l, end-pos
	names := [4]string{` "steps": [`, ` "entries": [`, ` "recordings": [`, ` "blobs": {`}
	const runAt = ` "run": {`
	switch {
	case s.cur >= 0 && n >= 2 && head[0] == ' ' && head[1] != ' ':
		// The list's closing line (" ]," or " }," ...): a list's
		// records are indented by two.
		if c := head[1]; c == ']' && s.cur < 3 || c == '}' && s.cur == 3 {
			l.list[s.cur].hi = pos - 1
		} else {
			l.list[s.cur], l.at[s.cur] = span{}, nil
		}
		s.cur = -1
	case s.cur >= 0:
		l.at[s.cur] = append(l.at[s.cur], pos)
	case l.run.hi == 0 && s.next == 0 && n >= len(runAt)+2 && bytes.HasPrefix(head, []byte(runAt)) && bytes.HasSuffix(tail, []byte("},")):
		l.run = span{pos + len(` "run": `), end - 1}
	case n > 2 && head[0] == ' ' && head[1] == '"':
		for k := s.next; k < 4; k++ {
			if n == len(names[k]) && string(head) == names[k] && !last {
				s.cur, s.next = k, k+1
				l.list[k].lo = end + 1
				break
			}
		}
	}
}

func (s *layoutScan) done() layout {
	if s.cur >= 0 { // never closed
		s.l.list[s.cur], s.l.at[s.cur] = span{}, nil
	}
	return s.l
}

// scanFile is scanLayout of the file f's first size bytes, read a buffer
// at a time.
func scanFile(f *os.File, size int) (layout, error) {
	s := layoutScan{cur: -1}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, int64(size)), 1<<20)
	var head, tail []byte
	pos := 0
	for pos < size {
		head, tail = head[:0], tail[:0]
		n := 0
		for {
			frag, err := r.ReadSlice('\n')
			n += len(frag)
			if len(head) < headMax {
				head = append(head, frag[:min(len(frag), headMax-len(head))]...)
			}
			tail = append(tail, frag[max(0, len(frag)-3):]...)
			tail = tail[max(0, len(tail)-3):]
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil && err != io.EOF {
				return layout{}, err
			}
			break
		}
		if n == 0 {
			return layout{}, io.ErrUnexpectedEOF // the file shrank
		}
		end, last := pos+n-1, true
		if tail[len(tail)-1] == '\n' {
			tail, last = tail[:len(tail)-1], false
		} else {
			end++
		}
		// head holds the newline of a short line: as scanLayout's, it
		// holds the line alone.
		head = head[:min(len(head), end-pos)]
		s.line(pos, end, head, tail[max(0, len(tail)-2):], last)
		pos = end + 1
	}
	return s.done(), nil
}

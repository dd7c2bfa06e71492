package board

import (
	"fmt"
	"hash/maphash"
	"os"
	"runtime"
	"sync"
)

// The lines of a board's entries read lazily (store_lazy.go) stay in its
// file: a 100k-step run's are 35 MB, a third of what its resume held
// once the board was read. An entry keeps where its line is and the
// line's hash; its content is read back, and its line written again,
// from the file as it was read. runner replaces a saved run's file
// (written beside it, then renamed), never writes into it, so the file
// kept open still holds the lines read even once the run has been saved
// again. A line read back unlike the one read (someone wrote into the
// file) is an error, never an entry's content or a saved line.
//
// A small file's lines (under settleMin), and every file's on Windows
// (where a file held open cannot be replaced), are kept in memory.

// lineSource is where a board's lazily read entries' lines are.
type lineSource struct {
	name string
	seed maphash.Seed
	t    *blobTable // the file's blobs, which lines name
	// steps: the step records' lines stay in the file too (LoadLean).
	steps bool

	refsMu sync.Mutex
	refs   map[int64][]string // the blobs the line at an offset names

	mu   sync.Mutex
	f    *os.File // nil: in mem
	mem  []byte   // the entries' lines, from offset base
	base int64
	win  []byte // the last block read from f, from offset at
	at   int64
}

// linesOnDisk says whether a file of size bytes leaves its entries'
// lines in it.
func linesOnDisk(size int) bool {
	return size >= settleMin && runtime.GOOS != "windows"
}

// newLineSource is the source of the lines of the file name: f, open on
// the file read, when they stay in it (closed when the os.File is let go
// of, with the board); nil when they are kept in memory (keep).
func newLineSource(name string, f *os.File) *lineSource {
	return &lineSource{name: name, seed: maphash.MakeSeed(), f: f}
}

// keep holds the entries' lines, at offset at in the file, in memory
// (lines is the source's now).
func (s *lineSource) keep(lines []byte, at int) {
	s.mem, s.base = lines, int64(at)
}

func (s *lineSource) sum(line []byte) uint64 { return maphash.Bytes(s.seed, line) }

// winSize is how much of the file one read takes: the lines are written
// back in order, a block of them at a time.
const winSize = 256 << 10

func (s *lineSource) setBlobRefs(at int64, refs []string) {
	s.refsMu.Lock()
	if s.refs == nil {
		s.refs = map[int64][]string{}
	}
	s.refs[at] = refs
	s.refsMu.Unlock()
}

func (s *lineSource) blobRefs(at int64) []string {
	s.refsMu.Lock()
	defer s.refsMu.Unlock()
	return s.refs[at]
}

// read appends to dst the line at (at, n) whose hash is sum, the line of
// what (an entry's seq, a step record's number), named as kind says.
func (s *lineSource) read(dst []byte, at int64, n int, sum uint64, kind string, what int64) ([]byte, error) {
	var line []byte
	if s.f == nil {
		line = s.mem[at-s.base : at-s.base+int64(n)]
		return append(dst, line...), nil
	}
	s.mu.Lock()
	if at < s.at || at+int64(n) > s.at+int64(len(s.win)) {
		if err := s.fill(at, n); err != nil {
			s.mu.Unlock()
			return dst, fmt.Errorf("%s: reading %s %d's line back: %w", s.name, kind, what, err)
		}
	}
	dst = append(dst, s.win[at-s.at:at-s.at+int64(n)]...)
	s.mu.Unlock()
	line = dst[len(dst)-n:]
	if s.sum(line) != sum {
		return dst[:len(dst)-n], fmt.Errorf("%s changed on disk after it was read (something wrote into it): %s %d's line is not as read", s.name, kind, what)
	}
	return dst, nil
}

// fill reads the block from at, n bytes or more.
func (s *lineSource) fill(at int64, n int) error {
	size := max(n, winSize)
	if cap(s.win) < size {
		s.win = make([]byte, size)
	}
	s.win = s.win[:size]
	m, err := s.f.ReadAt(s.win, at)
	s.win, s.at = s.win[:m], at
	if m >= n {
		return nil
	}
	if err == nil {
		err = fmt.Errorf("short read")
	}
	return err
}

package board

import (
	"encoding/json"
	"fmt"
	"sync"
)

// A replay reads its recording's step records as it reaches them, a few
// times each, and its entries once, at its end: held as rows, a
// 100k-step run's records (and the strings and results in them) were
// 20 MB of what its replay kept beside its own board, and the entries'
// rows 15 MB more. LoadLean leaves both in the file as LoadForRead
// leaves the entries' contents (store_lines.go): a record or an entry
// keeps where its line is and the line's hash, and is decoded again
// each time it is asked for. The keys' index is kept: a key's newest
// entry is one line read.

// LoadLean is LoadForRead with the step records and the entries left in
// the file, each read back when asked for: for a reader that goes
// through them once or a few times (a replay's recording), not one that
// asks for them all again and again. A small file's, and every file's
// on Windows, are held as LoadForRead holds them; those its journal
// added are held.
func LoadLean(path string) (*Board, error) { return loadReadOnly(path, lazySteps) }

// fileSteps are the step records left in the file, in order.
type fileSteps struct {
	lines []lazyStep
	src   *lineSource

	mu  sync.Mutex // dec, last
	dec lineDec
	// last: the records decoded last, by their number's low bits. A
	// replay asks for a visit's record several times as the visit runs
	// (its times, whether it was canceled, cut, its result): decoded
	// each time, they were a fifth of its CPU.
	last [16]struct {
		i  int
		ok bool
		s  StepRecord
	}
}

// lazyStep is where a step record's line is: 24 bytes where its row
// took 104 and its strings and result more.
type lazyStep struct {
	at  int64
	sum uint64 // the line's hash
	n   int32
}

func (f *fileSteps) len() int {
	if f == nil {
		return 0
	}
	return len(f.lines)
}

// record is record i decoded from its line, its blobs resolved: as the
// board would keep it. A line that is no longer as it was read gives a
// record that says so, as a lazily read entry's content does.
func (f *fileSteps) record(i int) StepRecord {
	s, err := f.decode(i)
	if err != nil {
		return StepRecord{Label: s.Label, Visit: s.Visit, Status: "failed",
			Error: fmt.Sprintf("[step record %d: it could not be read: %v]", i+1, err)}
	}
	return s
}

func (f *fileSteps) decode(i int) (StepRecord, error) {
	f.mu.Lock()
	c := &f.last[i%len(f.last)]
	if c.ok && c.i == i {
		s := c.s
		f.mu.Unlock()
		return s, nil
	}
	f.mu.Unlock()
	at := f.lines[i]
	line, err := f.src.read(nil, at.at, int(at.n), at.sum, "step record", int64(i)+1)
	if err != nil {
		return StepRecord{}, err
	}
	var s StepRecord
	f.mu.Lock()
	if len(f.dec.intern) > 64 { // a type or status repeats; a label seldom
		clear(f.dec.intern)
	}
	refs, ok := f.dec.step(line, &s)
	f.mu.Unlock()
	if !ok {
		s = StepRecord{}
		in := stepIn{StepRecord: &s}
		if err := json.Unmarshal(line, &in); err != nil {
			return StepRecord{}, err
		}
		refs = in.Refs
	}
	if err := f.src.t.resolveStep(&s, refs); err != nil {
		return s, err
	}
	if len(s.Inputs) == 0 {
		s.Inputs = nil // as a row gives it back
	}
	f.mu.Lock()
	c.i, c.ok, c.s = i, true, s
	f.mu.Unlock()
	return s, nil
}

// fileEntries are the entries left in the file, in order.
type fileEntries struct {
	lines []lazyEntry // where each is
	n     int         // how many of them the board has taken in, in order

	mu  sync.Mutex // dec
	dec lineDec
}

func (f *fileEntries) len() int {
	if f == nil {
		return 0
	}
	return f.n
}

// row is entry i as a row of its own, made from its line's header; its
// content stays in the file (entryRow.lazy). A line that is no longer
// as it was read gives an entry that says so.
func (f *fileEntries) row(i int) *entryRow {
	lz := &f.lines[i]
	r := new(entryRow)
	line, err := lz.line(nil, int64(i)+1)
	var h entryHead
	if err == nil {
		f.mu.Lock()
		if len(f.dec.intern) > 64 {
			clear(f.dec.intern)
		}
		var ok bool
		h, _, _, ok = f.dec.entryLine(line)
		f.mu.Unlock()
		if !ok {
			h = entryHead{}
			err = json.Unmarshal(line, &h)
		}
	}
	if err != nil {
		r.kind = new(entryKind)
		r.content = fmt.Sprintf("[entry %d: it could not be read: %v]", i+1, err)
		return r
	}
	e := Entry{ID: h.ID, Seq: h.Seq, Section: h.Section, Role: h.Role, Author: h.Author, Label: h.Label,
		Key: h.Key, Version: h.Version, Topic: h.Topic, TS: h.TS, TTL: h.TTL, Deleted: h.Deleted, lazy: lz}
	setRow(r, &e, &entryKind{section: e.Section, role: e.Role, author: e.Author, topic: e.Topic, deleted: e.Deleted}, nil)
	return r
}

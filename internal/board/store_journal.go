package board

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/sys/safefs"
)

// record is one journal line. A finished step is one line holding its step
// record and the entries written with it, so a torn write loses all of
// them together and a resumed run redoes the step without duplicates.
type record struct {
	N       int64       `json:"n"`
	Entry   *Entry      `json:"entry,omitempty"`
	Entries []*Entry    `json:"entries,omitempty"` // with Step, or a write and its conflict
	Step    *StepRecord `json:"step,omitempty"`
	Rec     *Recording  `json:"rec,omitempty"`
	Run     *Run        `json:"run,omitempty"`
	// SameSource: Run's plan_source is left out, being the one the
	// board held before this record (a 100k-step plan is 10 MB, and a
	// resume wrote it twice for every record of its status).
	SameSource bool `json:"same_plan_source,omitempty"`
}

// journal is the append-only file beside blackboard.json. Each change is one
// line written with one write(2), so a killed process leaves at most a torn
// last line, which loading drops.
type journal struct {
	path string // blackboard.json.journal
	file string // blackboard.json
	sync bool
	f    *os.File
	buf  []byte
	// texts: the board's, whose strings are hashed once (held.go).
	texts *texts
	// recent: the keys of the values it wrote last, stored as text
	// (store_blobslice.go).
	recent []string
}

// append writes rec as one line. Its large strings that neither the file
// nor an earlier line holds go into the line's "blobs" (known: the keys
// they hold, updated once the line is written), so a value is journaled
// once however many records hold it.
func (j *journal) append(rec *record, known map[string]bool) error {
	if j.f == nil {
		f, err := safefs.OpenFile(j.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, FileMode)
		if err != nil {
			return err
		}
		j.f = f
	}
	x := newBlobSink(known)
	x.texts = j.texts
	body := strconv.AppendInt(append(j.buf[:0], `{"n":`...), rec.N, 10)
	cut := len(body) // where the blobs go, if any
	body, err := appendRecord(body, rec, x)
	if err != nil {
		return err
	}
	body = append(body, '}', '\n')
	j.buf = body
	if len(x.table) == 0 {
		// One write(2): a killed process leaves at most a torn last line.
		if _, err := j.f.Write(body); err != nil {
			return err
		}
	} else {
		// The blobs go between the head and the rest, streamed: a torn
		// line is still only the last (it has no newline), and the
		// values are not copied into one buffer first.
		x.slices(j.texts.recentTexts(j.recent, known))
		w := bufio.NewWriterSize(j.f, 64<<10)
		w.Write(body[:cut])
		w.WriteString(`,"blobs":{`)
		var scratch []byte
		for i := range x.table {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(`"` + x.table[i].key + `":`)
			if scratch, err = x.table[i].writeTo(w, scratch); err != nil {
				return err
			}
		}
		w.WriteByte('}')
		w.Write(body[cut:])
		if err := w.Flush(); err != nil {
			return err
		}
		for _, bl := range x.table {
			known[bl.key] = true
		}
		j.noteRecent(x.table)
	}
	// An append changes only the journal's own times: the run's folder
	// is touched so that one stat of it sees every change to the run.
	boardlock.Touch(j.file)
	if j.sync {
		return j.f.Sync()
	}
	return nil
}

// truncate empties the journal after its records went into the file.
func (j *journal) truncate() error {
	if j.f != nil {
		j.f.Close()
		j.f = nil
	}
	err := safefs.Remove(j.path)
	if os.IsNotExist(err) {
		return nil
	}
	return err
}

func (j *journal) close() error {
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// logLocked numbers rec and appends it to the journal, if there is one.
func (b *Board) logLocked(rec record) error {
	if b.readOnly {
		return errors.New("board: loaded for reading only (LoadForRead): not written")
	}
	if b.journal == nil {
		return nil
	}
	rec.N = b.journalN + 1
	if b.blobsKnown == nil {
		b.blobsKnown = map[string]bool{}
	}
	b.journal.texts = &b.texts
	if err := b.journal.append(&rec, b.blobsKnown); err != nil {
		return err
	}
	b.journalN = rec.N
	return nil
}

// checkNumber checks a journal record's number against the one before it
// (prev; -1 for the first line) and the file's watermark (base). Records
// are numbered one by one from the file's journal_n on, so a number that
// does not follow is damage, and an error: taking it as the watermark
// would skip every record after it without a word, and a resume would run
// their steps again. A record at or below the watermark must be one the
// file holds (a crash between saving the file and removing the journal
// leaves such records); one the file does not hold means its journal_n is
// wrong.
func (b *Board) checkNumber(rec *record, prev, base int64) error {
	switch {
	case rec.N < 1:
		return fmt.Errorf("journal record number %d: records are numbered from 1", rec.N)
	case prev >= 0 && rec.N != prev+1:
		return fmt.Errorf("journal record number %d follows %d: want %d (the journal is damaged; nothing after this line was read)", rec.N, prev, prev+1)
	case prev < 0 && rec.N-1 > base:
		return fmt.Errorf("journal record number %d, but the file holds records up to %d (journal_n): records %d to %d are missing", rec.N, base, base+1, rec.N-1)
	case rec.N <= base && !b.holds(rec):
		return fmt.Errorf("journal record %d is at or below the file's journal_n %d, but the file does not hold it: journal_n is wrong", rec.N, base)
	}
	return nil
}

// holds reports whether the board (as read from the file) has what rec
// adds.
func (b *Board) holds(rec *record) bool {
	n := int64(b.entries.len())
	if rec.Entry != nil && rec.Entry.Seq > n {
		return false
	}
	for _, e := range rec.Entries {
		if e.Seq > n {
			return false
		}
	}
	if s := rec.Step; s != nil {
		same := func(i int) bool {
			r := b.steps.record(i)
			return r.Label == s.Label && r.Visit == s.Visit && r.FinishedAt.Equal(s.FinishedAt)
		}
		// Such records come in the order of the file's last records:
		// where the one before was found says where this one is. Sought
		// from the end each time, a journal of 20k records took the square
		// of that, each record read from its line on a lean board.
		n := b.steps.len()
		found := b.holdsNext > 0 && b.holdsNext < n && same(b.holdsNext)
		if found {
			b.holdsNext++
		}
		for i := n - 1; i >= 0 && !found; i-- {
			if found = same(i); found {
				b.holdsNext = i + 1
			}
		}
		if !found {
			return false
		}
	}
	if r := rec.Rec; r != nil {
		found := false
		for i := len(b.recordings) - 1; i >= 0 && !found; i-- {
			x := b.recordings[i]
			found = x.Label == r.Label && x.Visit == r.Visit && x.Call == r.Call && x.Kind == r.Kind
		}
		if !found {
			return false
		}
	}
	return true
}

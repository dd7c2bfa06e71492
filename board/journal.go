package board

import "os"

// record is one journal line: exactly one of its pointers is set.
type record struct {
	N     int64       `json:"n"`
	Entry *Entry      `json:"entry,omitempty"`
	Step  *StepRecord `json:"step,omitempty"`
	Rec   *Recording  `json:"rec,omitempty"`
	Run   *Run        `json:"run,omitempty"`
}

// journal is the append-only file beside blackboard.json. Each change is one
// line written with one write(2), so a killed process leaves at most a torn
// last line, which loading drops.
type journal struct {
	path  string // blackboard.json.journal
	file  string // blackboard.json
	sync  bool
	f     *os.File
	buf   []byte
	line  []byte
	batch bool // collect records in buf until flush
}

func (j *journal) append(rec *record) error {
	if j.f == nil {
		f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		j.f = f
	}
	if !j.batch {
		j.buf = j.buf[:0]
	}
	line, err := appendRecord(j.line[:0], rec)
	j.line = line
	if err != nil {
		return err
	}
	j.buf = append(append(j.buf, line...), '\n')
	if j.batch {
		return nil
	}
	return j.flush()
}

// flush writes the collected lines with one write(2). A process killed
// during it leaves a torn last line, which loading drops, and nothing of
// the batch is reported done before it returns.
func (j *journal) flush() error {
	if j == nil || len(j.buf) == 0 {
		return nil
	}
	buf := j.buf
	j.buf = j.buf[:0]
	if _, err := j.f.Write(buf); err != nil {
		return err
	}
	if j.sync {
		return j.f.Sync()
	}
	return nil
}

// flushBatch ends batching; records still unwritten after a failed batch
// are dropped with it.
func (j *journal) flushBatch() {
	j.batch = false
	j.buf = j.buf[:0]
}

// truncate empties the journal after its records went into the file.
func (j *journal) truncate() error {
	if j.f != nil {
		j.f.Close()
		j.f = nil
	}
	err := os.Remove(j.path)
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
	if b.journal == nil {
		return nil
	}
	rec.N = b.journalN + 1
	if err := b.journal.append(&rec); err != nil {
		return err
	}
	b.journalN = rec.N
	return nil
}

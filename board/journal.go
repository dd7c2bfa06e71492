package board

import "os"

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
}

func (j *journal) append(rec *record) error {
	if j.f == nil {
		f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		j.f = f
	}
	line, err := appendRecord(j.buf[:0], rec)
	if err != nil {
		return err
	}
	j.buf = append(line, '\n')
	if _, err := j.f.Write(j.buf); err != nil {
		return err
	}
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

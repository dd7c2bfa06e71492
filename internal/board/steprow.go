package board

import (
	"encoding/json"
	"math"
	"time"
)

// stepRow is a step record as the board keeps it: a StepRecord is 288
// bytes, a tenth of them fields most steps leave empty, and a run keeps
// one per step. The rare fields sit behind one pointer, the type and
// status behind another that the rows alike share, the inputs are packed
// (pack.go), and a record is built again when it is handed out: 104
// bytes a row.
type stepRow struct {
	label             string
	kind              *rowKind
	visit, attempts   int32 // in rare when they do not fit
	started, finished instant
	durationMS        int64
	result            json.RawMessage
	inputs            string // packed: JSON
	rare              *stepRare
}

// rowKind is a row's type and status, one for each pair a board holds
// (rowKindOf).
type rowKind struct{ typ, status string }

// stepRare holds what few step records have (a branch's goto, a
// failure's error, a group's parent), and behind one more pointer what
// fewer still have: a branch's row took 208 bytes for its goto.
type stepRare struct {
	parent, goTo, err, host, agent string
	*stepRarer
}

// stepRarer is the part of a stepRare that fewer records still have.
type stepRarer struct {
	delays []int64
	inputs map[string]string // inputs too large to pack
	// the times, when either is not an instant
	started, finished time.Time
	times             bool
	// visit and attempts, when either does not fit the row's int32
	visit, attempts int
	counts          bool
	// a result's large strings held apart (held.go)
	held  held
	built *built
}

// instant is a time in UTC as nanoseconds since 1970, 8 bytes where a
// time.Time takes 24: the times a run stamps its records with. A time
// it cannot say as it was (another zone, a monotonic reading, which
// only a local time has, out of range) is kept whole in the row's
// stepRare.
type instant int64

// noInstant is the zero time.Time.
const noInstant = instant(math.MinInt64)

// instantOf is t as an instant, when t is one exactly.
func instantOf(t time.Time) (instant, bool) {
	if t == (time.Time{}) {
		return noInstant, true
	}
	if t.Location() != time.UTC || t.Year() < 1678 || t.Year() > 2261 {
		return 0, false
	}
	return instant(t.UnixNano()), true
}

func (i instant) time() time.Time {
	if i == noInstant {
		return time.Time{}
	}
	return time.Unix(0, int64(i)).UTC()
}

// rowOf is s as the board keeps it.
func (b *Board) rowOf(s *StepRecord) stepRow {
	if len(s.Inputs) == 0 {
		s.Inputs = nil // as the file keeps it
	}
	b.packInputs(s)
	started, ok1 := instantOf(s.StartedAt)
	finished, ok2 := instantOf(s.FinishedAt)
	counts := s.Visit == int(int32(s.Visit)) && s.Attempts == int(int32(s.Attempts))
	r := stepRow{label: s.Label, kind: b.rowKindOf(s.Type, s.Status), visit: int32(s.Visit), attempts: int32(s.Attempts),
		started: started, finished: finished, durationMS: s.DurationMS, result: s.Result, inputs: s.packedInputs}
	rarer := len(s.Delays) > 0 || s.Inputs != nil || !ok1 || !ok2 || !counts || s.held != nil || s.built != nil
	if s.Parent != "" || s.Goto != "" || s.Error != "" || s.Host != "" || s.Agent != "" || rarer {
		r.rare = &stepRare{parent: s.Parent, goTo: s.Goto, err: s.Error, host: s.Host, agent: s.Agent}
	}
	if rarer {
		x := &stepRarer{delays: s.Delays, inputs: s.Inputs, held: s.held, built: s.built}
		if !ok1 || !ok2 {
			x.started, x.finished, x.times = s.StartedAt, s.FinishedAt, true
		}
		if !counts {
			x.visit, x.attempts, x.counts = s.Visit, s.Attempts, true
		}
		r.rare.stepRarer = x
	}
	return r
}

// rowKindOf is the board's rowKind for a type and a status.
func (b *Board) rowKindOf(typ, status string) *rowKind {
	k := rowKind{typ, status}
	if p := b.rowKinds[k]; p != nil {
		return p
	}
	if b.rowKinds == nil {
		b.rowKinds = map[rowKind]*rowKind{}
	}
	p := new(rowKind)
	*p = k // k itself stays on the stack: most rows share a kind
	b.rowKinds[k] = p
	return p
}

// record is the row as a StepRecord as the board keeps it: large
// strings held apart, inputs packed (whole gives both back).
func (r *stepRow) record() StepRecord {
	s := StepRecord{Label: r.label, Type: r.kind.typ, Status: r.kind.status, Visit: int(r.visit), Attempts: int(r.attempts),
		StartedAt: r.started.time(), FinishedAt: r.finished.time(), DurationMS: r.durationMS, Result: r.result,
		packedInputs: r.inputs}
	if r.rare != nil {
		s.Parent, s.Goto, s.Error, s.Host, s.Agent = r.rare.parent, r.rare.goTo, r.rare.err, r.rare.host, r.rare.agent
	}
	if x := r.rarer(); x != nil {
		s.Delays, s.Inputs, s.held, s.built = x.delays, x.inputs, x.held, x.built
		if x.times {
			s.StartedAt, s.FinishedAt = x.started, x.finished
		}
		if x.counts {
			s.Visit, s.Attempts = x.visit, x.attempts
		}
	}
	return s
}

// rarer is the row's stepRarer, if it has one.
func (r *stepRow) rarer() *stepRarer {
	if r.rare == nil {
		return nil
	}
	return r.rare.stepRarer
}

// stepRows are the rows in chunks of a fixed size: a run's records only
// grow, and one slice of them was copied whole at every growth, the
// old copy left for the collector (at 100k steps, tens of megabytes of
// garbage and free pages for one record more).
//
// A board read by LoadLean keeps the records read from its file there
// (file, store_leansteps.go); the rows are the records added after them.
type stepRows struct {
	file   *fileSteps
	chunks [][]stepRow
	n      int
}

const rowChunk = 1024

func (rs *stepRows) len() int { return rs.file.len() + rs.n }

// record is record i (from 0) as the board keeps it (stepRow.record).
func (rs *stepRows) record(i int) StepRecord {
	n := rs.file.len()
	if i < n {
		return rs.file.record(i)
	}
	return rs.row(i - n).record()
}

// row is row i of those added (after the file's records).
func (rs *stepRows) row(i int) *stepRow { return &rs.chunks[i/rowChunk][i%rowChunk] }

func (rs *stepRows) add(r stepRow) {
	if rs.n%rowChunk == 0 {
		rs.chunks = append(rs.chunks, make([]stepRow, 0, rowChunk))
	}
	last := &rs.chunks[len(rs.chunks)-1]
	*last = append(*last, r)
	rs.n++
}

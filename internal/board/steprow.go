package board

import (
	"encoding/json"
	"time"
)

// stepRow is a step record as the board keeps it: a StepRecord is 288
// bytes, a tenth of them fields most steps leave empty, and a run keeps
// one per step. The rare fields sit behind one pointer, the inputs are
// packed (pack.go), and a record is built again when it is handed out.
type stepRow struct {
	label, typ, status string
	visit, attempts    int
	started, finished  time.Time
	durationMS         int64
	result             json.RawMessage
	inputs             string // packed: JSON
	rare               *stepRare
	held               held
	built              *built
}

// stepRare holds what few step records have.
type stepRare struct {
	parent, goTo, err, host, agent string
	delays                         []int64
	inputs                         map[string]string // inputs too large to pack
}

// rowOf is s as the board keeps it.
func (b *Board) rowOf(s *StepRecord) stepRow {
	if len(s.Inputs) == 0 {
		s.Inputs = nil // as the file keeps it
	}
	b.packInputs(s)
	r := stepRow{label: s.Label, typ: s.Type, status: s.Status, visit: s.Visit, attempts: s.Attempts,
		started: s.StartedAt, finished: s.FinishedAt, durationMS: s.DurationMS, result: s.Result,
		inputs: s.packedInputs, held: s.held, built: s.built}
	if s.Parent != "" || s.Goto != "" || s.Error != "" || s.Host != "" || s.Agent != "" || len(s.Delays) > 0 || s.Inputs != nil {
		r.rare = &stepRare{parent: s.Parent, goTo: s.Goto, err: s.Error, host: s.Host, agent: s.Agent,
			delays: s.Delays, inputs: s.Inputs}
	}
	return r
}

// record is the row as a StepRecord as the board keeps it: large
// strings held apart, inputs packed (whole gives both back).
func (r *stepRow) record() StepRecord {
	s := StepRecord{Label: r.label, Type: r.typ, Status: r.status, Visit: r.visit, Attempts: r.attempts,
		StartedAt: r.started, FinishedAt: r.finished, DurationMS: r.durationMS, Result: r.result,
		packedInputs: r.inputs, held: r.held, built: r.built}
	if x := r.rare; x != nil {
		s.Parent, s.Goto, s.Error, s.Host, s.Agent, s.Delays, s.Inputs = x.parent, x.goTo, x.err, x.host, x.agent, x.delays, x.inputs
	}
	return s
}

// stepRows are the rows in chunks of a fixed size: a run's records only
// grow, and one slice of them was copied whole at every growth, the
// old copy left for the collector (at 100k steps, tens of megabytes of
// garbage and free pages for one record more).
type stepRows struct {
	chunks [][]stepRow
	n      int
}

const rowChunk = 1024

func (rs *stepRows) len() int { return rs.n }

func (rs *stepRows) at(i int) *stepRow { return &rs.chunks[i/rowChunk][i%rowChunk] }

func (rs *stepRows) add(r stepRow) {
	if rs.n%rowChunk == 0 {
		rs.chunks = append(rs.chunks, make([]stepRow, 0, rowChunk))
	}
	last := &rs.chunks[len(rs.chunks)-1]
	*last = append(*last, r)
	rs.n++
}

// rowsOf is the rows of records read from a file.
func (b *Board) rowsOf(recs []StepRecord) stepRows {
	var rs stepRows
	for i := range recs {
		rs.add(b.rowOf(&recs[i]))
	}
	return rs
}

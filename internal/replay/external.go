package replay

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// KindExternal is a board write an outside process made: during the run
// (through the live board), or on the saved file of a run no process
// owned (`runner board FILE put` after it ended, or before a resume).
// Call is how many step records the board held when it arrived, Response
// the entry; Request, for a write on the saved file, an externalWhere. A
// replay makes the write again at the same point: between the same two
// steps, or, after the run's end, when the replayed run ends.
const KindExternal = "external"

// externalWhere is the Request of a write on a saved run's file: how the
// run stood when it came (its status: succeeded, failed, interrupted,
// waiting, running for a killed one).
type externalWhere struct {
	AfterRun string `json:"after_run"`
}

// RecordExternal returns a function that records each outside write to b
// (for liveboard.Server.OnWrite), so a replay of the run sees it.
func RecordExternal(b *board.Board) func(board.Entry) {
	return func(e board.Entry) {
		if r, err := External(b, e); err == nil {
			b.AddRecording(r)
		}
	}
}

// External is the recording of e, an outside write that b just took.
func External(b *board.Board, e board.Entry) (board.Recording, error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return board.Recording{}, err
	}
	return board.Recording{Kind: KindExternal, Label: e.Key, Call: len(b.StepsKeyed()), Response: raw}, nil
}

// RecordAfterRun records e, a write b just took on the saved file of a
// run no process owns (the run has ended, or stopped before a resume), so
// that a replay makes it again where it came and still matches.
func RecordAfterRun(b *board.Board, e board.Entry) error {
	r, err := External(b, e)
	if err != nil {
		return err
	}
	r.Request, err = json.Marshal(externalWhere{AfterRun: b.Run().Status})
	if err != nil {
		return err
	}
	return b.AddRecording(r)
}

// OutsideWrite is a write from outside the run that a replay made again,
// and where it came.
type OutsideWrite struct {
	Key     string `json:"key"`
	Deleted bool   `json:"deleted,omitempty"`
	// Where: "after the run ended (succeeded)", "between steps a#1 and b#1",
	// "before the first step", "after the run stopped (failed), before it was resumed".
	Where string `json:"where"`
}

// externals are a recording's outside writes, in the order they came.
type externals struct {
	writes []external
	next   int
	done   []OutsideWrite // the writes made again, in order
}

type external struct {
	after int // step records before it
	e     board.Entry
	// last: it came on the saved file after the recording's last step:
	// made again when the replayed run ends, however many steps a changed
	// plan runs.
	last  bool
	where string
}

func newExternals(rec *board.Board) *externals {
	x := &externals{}
	// The outside writes built whole, not every large answer.
	steps := rec.NumSteps()
	for _, r := range rec.RecordingsKeyed() {
		if r.Kind != KindExternal {
			continue
		}
		r = r.Whole()
		var e board.Entry
		if json.Unmarshal(r.Response, &e) != nil {
			continue
		}
		w := external{after: r.Call, e: e}
		var at externalWhere
		if len(r.Request) > 0 && json.Unmarshal(r.Request, &at) == nil && at.AfterRun != "" {
			w.last = r.Call >= steps
			if w.last {
				w.where = fmt.Sprintf("after the run ended (%s)", at.AfterRun)
			} else {
				w.where = fmt.Sprintf("after the run stopped (%s), before it was resumed", at.AfterRun)
			}
		} else {
			w.where = between(rec, steps, r.Call)
		}
		x.writes = append(x.writes, w)
	}
	x.writes = append(x.writes, unrecorded(rec, x.writes, steps)...)
	// In the order they came: their place among the steps, then their
	// place on the board.
	sort.SliceStable(x.writes, func(i, j int) bool {
		a, b := x.writes[i], x.writes[j]
		return a.after < b.after || a.after == b.after && a.e.Seq < b.e.Seq
	})
	return x
}

// unrecorded are the writes `runner board FILE put` made on the saved
// file after the run's last step before such writes were recorded: found
// by their meta.via, they are made again when the replayed run ends.
// steps is the number of the recording's step records.
func unrecorded(rec *board.Board, known []external, steps int) []external {
	seen := map[string]bool{}
	for _, w := range known {
		seen[fmt.Sprintf("%s\x00%d", w.e.Key, w.e.Version)] = true
	}
	var out []external
	for _, e := range afterLastStep(rec) {
		if e.Key == "" || e.Meta["via"] != board.ViaCLI || seen[fmt.Sprintf("%s\x00%d", e.Key, e.Version)] {
			continue
		}
		out = append(out, external{after: steps, e: e, last: true,
			where: fmt.Sprintf("after the run ended (%s; not recorded, found by its meta.via)", rec.Run().Status)})
	}
	return out
}

// afterLastStep are the entries after the recording's last step entry
// (all of them if it has none), looked for from the newest back, a
// window at a time: copying every entry of the recording to find them
// was a twentieth of a replay, and a query by role indexes the whole
// board (12 MB at 100k entries) for an entry near its end.
func afterLastStep(rec *board.Board) []board.Entry {
	n := int64(rec.Len())
	for k := int64(64); ; k *= 4 {
		from := max(n-k, 0)
		es := rec.Query(board.Filter{AfterSeq: from})
		for i := len(es) - 1; i >= 0; i-- {
			if es[i].Role == "step" {
				return es[i+1:]
			}
		}
		if from == 0 {
			return es
		}
	}
}

// between says where a write that came after the first n step records
// stands among the recording's steps step records.
func between(rec *board.Board, steps, n int) string {
	name := func(i int) string { s := rec.StepKeyed(i); return fmt.Sprintf("%s#%d", s.Label, s.Visit) }
	switch {
	case n <= 0 || steps == 0:
		return "before the first step"
	case n >= steps:
		return "after step " + name(steps-1)
	}
	return fmt.Sprintf("between steps %s and %s", name(n-1), name(n))
}

// apply makes the outside writes that came before the board held more
// than steps step records.
func (x *externals) apply(b *board.Board, steps int) {
	for ; x.next < len(x.writes) && x.writes[x.next].after <= steps && !x.writes[x.next].last; x.next++ {
		x.write(b, x.writes[x.next])
	}
}

// applyEnd makes the writes that came after the recorded run ended.
func (x *externals) applyEnd(b *board.Board) {
	for ; x.next < len(x.writes); x.next++ {
		x.write(b, x.writes[x.next])
	}
}

func (x *externals) write(b *board.Board, w external) {
	e := w.e
	op := board.WriteOp{Key: e.Key, Value: e.Content, Section: e.Section, Author: e.Author, Label: e.Label,
		Role: e.Role, Meta: e.Meta, Topic: e.Topic, Delete: e.Deleted, ExpectVersion: -1}
	if e.TTL != nil {
		op.TTL = time.Duration(*e.TTL * float64(time.Second))
	}
	b.Write(op) // a write the board refuses now was refused then too: it is not on the recorded board
	x.done = append(x.done, OutsideWrite{Key: e.Key, Deleted: e.Deleted, Where: w.where})
}

// pending are the outside writes the replay did not get to, said for a
// divergence of the boards.
func (x *externals) pending() []OutsideWrite {
	var out []OutsideWrite
	for _, w := range x.writes[x.next:] {
		out = append(out, OutsideWrite{Key: w.e.Key, Deleted: w.e.Deleted, Where: w.where})
	}
	return out
}

// Describe says, in one line, which outside writes there were and where.
func Describe(ws []OutsideWrite) string {
	var parts []string
	at := map[string]int{}
	for _, w := range ws {
		what := w.Key
		if w.Deleted {
			what = "delete " + w.Key
		}
		i, ok := at[w.Where]
		if !ok {
			at[w.Where] = len(parts)
			parts = append(parts, what+" "+w.Where)
			continue
		}
		k := strings.LastIndex(parts[i], " "+w.Where)
		parts[i] = parts[i][:k] + ", " + what + parts[i][k:]
	}
	return strings.Join(parts, "; ")
}

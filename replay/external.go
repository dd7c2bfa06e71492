package replay

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/planrunner/runner/board"
)

// KindExternal is a board write an outside process made during the run
// (through the live board): Call is how many step records the board held
// when it arrived, Response the entry. A replay makes the write again at
// the same point, between the same two steps.
const KindExternal = "external"

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
	return board.Recording{Kind: KindExternal, Label: e.Key, Call: len(b.Steps()), Response: raw}, nil
}

// externals are a recording's outside writes, in the order they came.
type externals struct {
	writes []external
	next   int
}

type external struct {
	after int // step records before it
	e     board.Entry
}

func newExternals(recs []board.Recording) *externals {
	x := &externals{}
	for _, r := range recs {
		var e board.Entry
		if r.Kind == KindExternal && json.Unmarshal(r.Response, &e) == nil {
			x.writes = append(x.writes, external{r.Call, e})
		}
	}
	sort.SliceStable(x.writes, func(i, j int) bool { return x.writes[i].after < x.writes[j].after })
	return x
}

// apply makes the outside writes that came before the board held more
// than steps step records.
func (x *externals) apply(b *board.Board, steps int) {
	for ; x.next < len(x.writes) && x.writes[x.next].after <= steps; x.next++ {
		e := x.writes[x.next].e
		op := board.WriteOp{Key: e.Key, Value: e.Content, Section: e.Section, Author: e.Author, Label: e.Label,
			Role: e.Role, Meta: e.Meta, Topic: e.Topic, Delete: e.Deleted, ExpectVersion: -1}
		if e.TTL != nil {
			op.TTL = time.Duration(*e.TTL * float64(time.Second))
		}
		b.Write(op) // a write the board refuses now was refused then too: it is not on the recorded board
	}
}

package replay

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
)

// TestScriptKeepsNoCopyOfTheRecords fails when a replay's script copies the
// recording's step records: it holds where each visit's last record is
// in the recording (16 bytes a visit) and reads it from there. It held
// each record twice (in order, and by visit: about 600 bytes a step), a
// third of what replaying a 100k-step run kept, and then a map of the
// visits (90 bytes a step).
func TestScriptKeepsNoCopyOfTheRecords(t *testing.T) {
	const n = 5000
	rec := board.New(board.Run{ID: "t", Status: board.StatusSucceeded})
	for i := range n {
		s := board.StepRecord{Label: fmt.Sprintf("s%d", i), Type: "echo", Visit: 1 + i%2, Status: board.StatusSucceeded,
			Inputs: map[string]string{"text": "hi"}, Result: []byte(`{"text":"hi"}`)}
		if err := rec.FinishStep(s, board.Entry{Role: "step", Author: s.Label, Content: "out"}); err != nil {
			t.Fatal(err)
		}
	}
	live := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	caps := func(string) engine.Caps { return engine.Caps{Replay: engine.ReplayWorld} } // served offline
	before := live()
	s := newScript(rec, caps, time.Minute, true, nil, nil)
	perStep := float64(live()-before) / n
	runtime.KeepAlive(s)
	t.Logf("the script keeps %.0f bytes per recorded step", perStep)
	if perStep > 48 {
		t.Errorf("the script keeps %.0f bytes per recorded step, want at most 48 (where each visit's record is, not copies of the records)", perStep)
	}
	// What it serves offline is the recording's record, whole.
	got, ok := s.Result("s7", 2)
	if !ok || got.Label != "s7" || got.Visit != 2 || got.Inputs["text"] != "hi" || string(got.Result) != `{"text":"hi"}` {
		t.Errorf("served %+v, %v; want s7's second visit with its inputs and result", got, ok)
	}
	if got, _ := s.Result("s7", 1); got.Status != board.StatusFailed {
		t.Errorf("served s7's first visit, which the recording does not have, as %s; want it failed", got.Status)
	}
}

// A segment finds a visit's last record by the visit's hash, and tells
// apart visits whose hashes are the same: forced here, by a chance of
// one in 2^64 in a run.
func TestSegmentFindsEachVisitsLastRecord(t *testing.T) {
	rec := board.New(board.Run{ID: "t", Status: board.StatusSucceeded})
	for _, s := range []board.StepRecord{
		{Label: "a", Visit: 1, Status: board.StatusFailed},
		{Label: "b", Visit: 1, Status: board.StatusSucceeded},
		{Label: "a", Visit: 1, Status: board.StatusSucceeded}, // a#1 again, later: the one found
		{Label: "a", Visit: 2, Status: board.StatusSucceeded},
		{Label: "b", Visit: 2, Status: board.StatusSucceeded},
	} {
		if err := rec.AddStep(s); err != nil {
			t.Fatal(err)
		}
	}
	want := map[visitKey]int{{"a", 1}: 2, {"b", 1}: 1, {"a", 2}: 3, {"b", 2}: 4}
	for _, collide := range []bool{false, true} {
		g := newSegment(rec, 0, rec.NumSteps(), board.StatusSucceeded, "", nil, nil)
		if collide {
			g.hash = func(visitKey) uint64 { return 42 }
			g.last = g.last[:0]
			for i := range rec.NumSteps() { // every record, as newSegment takes them
				g.last = append(g.last, visitAt{42, i})
			}
			g.last = lastOfEach(rec, g.last)
		}
		if len(g.last) != len(want) {
			t.Errorf("collide %v: %d places kept, want %d (one a visit)", collide, len(g.last), len(want))
		}
		for k, i := range want {
			at, r, ok := g.find(k)
			if !ok || at != i || r.Label != k.label || r.Visit != k.visit {
				t.Errorf("collide %v: %s#%d found at %d (%s#%d, %v), want %d", collide, k.label, k.visit, at, r.Label, r.Visit, ok, i)
			}
		}
		if r, _ := g.record(visitKey{"a", 1}); r.Status != board.StatusSucceeded {
			t.Errorf("collide %v: a#1 is its first record (%s), not its last", collide, r.Status)
		}
		for _, k := range []visitKey{{"a", 3}, {"c", 1}, {"", 0}} {
			if g.has(k) {
				t.Errorf("collide %v: the segment has %s#%d, which the recording never ran", collide, k.label, k.visit)
			}
		}
	}
}

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
// in the recording and reads it from there. It held each record twice
// (in order, and by visit: about 600 bytes a step), a third of what
// replaying a 100k-step run kept.
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
	if perStep > 250 {
		t.Errorf("the script keeps %.0f bytes per recorded step, want at most 250 (an index, not copies of the records)", perStep)
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

package engine

import (
	"math"
	"reflect"
	"testing"
	"unsafe"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
)

// A finished step's state is kept small, its status as an index and its
// rare parts apart; steps.<label> built from it must be the view of the
// record and result as given, whatever they hold.
func TestStepStateViewIsTheRecords(t *testing.T) {
	maxInt32 := int64(math.MaxInt32) // + 1: beyond int32 where an int is 64 bits
	n := &Node{Step: plans.NewStep("a", "echo"), nodeMore: noMore}
	type out struct{ Text string }
	cases := []struct {
		name string
		rec  board.StepRecord
		res  Result
	}{
		{"succeeded", board.StepRecord{Status: StatusSucceeded, Visit: 1, DurationMS: 12}, Result{Output: "hi"}},
		{"failed with its error", board.StepRecord{Status: StatusFailed, Error: "exit status 2", Visit: 3}, Result{Output: 7}},
		{"skipped", board.StepRecord{Status: StatusSkipped, Visit: 1}, Result{}},
		{"canceled", board.StepRecord{Status: StatusCanceled, Visit: 2, DurationMS: -1}, Result{}},
		{"interrupted", board.StepRecord{Status: StatusInterrupted, Visit: 1}, Result{}},
		{"pending", board.StepRecord{Status: StatusPending}, Result{}},
		{"a status not known", board.StepRecord{Status: "paused", Visit: 1}, Result{Output: []any{"x"}}},
		{"no status", board.StepRecord{Visit: 1}, Result{}},
		{"timed out", board.StepRecord{Status: StatusFailed, Error: "timed out after 1s", Visit: 1}, Result{TimedOut: true}},
		{"timed out without an error", board.StepRecord{Status: StatusSucceeded, Visit: 1}, Result{TimedOut: true}},
		{"fields", board.StepRecord{Status: StatusSucceeded, Visit: 1}, Result{Output: "o", Fields: &out{Text: "t"}}},
		{"visits beyond int32", board.StepRecord{Status: StatusSucceeded, Visit: int(maxInt32 + 1)}, Result{}},
		{"negative visits", board.StepRecord{Status: StatusSucceeded, Visit: -1}, Result{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := newStepState(n, c.rec, c.res).view()
			want := withTimedOut(stateView(c.rec.Status, c.res.Output, c.rec.Error, c.rec.Visit, c.rec.DurationMS, orZero(c.res.Fields, n)), c.res)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("view\n got %v\nwant %v", got, want)
			}
		})
	}
	if size := unsafe.Sizeof(stepState{}); size > 64 && unsafe.Sizeof(0) == 8 {
		t.Errorf("a stepState takes %d bytes, more than 64", size)
	}
}

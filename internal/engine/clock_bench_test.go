package engine

import (
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// BenchmarkClockReading is the cost of one recorded clock reading (a TTL
// check or now() in a step visit): the reading and its journal line.
func BenchmarkClockReading(b *testing.B) {
	bb, err := board.Create(b.TempDir()+"/blackboard.json", board.Run{ID: "bench"}, board.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer bb.Close()
	r := &Runner{Board: bb, clockN: map[visitKey]int{}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.now("step", i)
	}
}

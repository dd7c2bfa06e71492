package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// BenchmarkStep measures the engine's overhead per trivial step, journal
// write included, on boards that already hold 10, 10k and 100k entries: the
// cost must stay flat as the board grows. The loop is a trivial step and a
// jump back evaluating an expression, so one op is two steps; ns/step is
// the figure to read.
func BenchmarkStep(b *testing.B) {
	for _, sync := range []bool{false, true} {
		for _, size := range []int{10, 10_000, 100_000} {
			if sync && size != 10_000 {
				continue
			}
			name := fmt.Sprintf("entries=%d", size)
			if sync {
				name += "/fsync"
			}
			b.Run(name, func(b *testing.B) { benchStep(b, size, sync, "") })
		}
	}
}

// BenchmarkStepClock is BenchmarkStep (10 entries) with every visit of
// the jump reading the clock (now() in its `when`): each reading is
// recorded on the board (a journal line), so a replay reads the same time.
// Compare its ns/step with BenchmarkStep/entries=10.
func BenchmarkStepClock(b *testing.B) {
	benchStep(b, 10, false, "now().Unix() > 0 && ")
}

func benchStep(b *testing.B, size int, sync bool, cond string) {
	src := fmt.Sprintf(`
version: 1
limits: {max_steps: 1000000000}
steps:
  - {label: tick, type: echo, text: x, max_visits: 1000000000}
  - {label: back, type: jump, when: "%ssteps.tick.visits < %d", to: tick, max_visits: 1000000000}
`, cond, b.N)
	prog, err := engine.Compile("bench.yaml", []byte(src), registry())
	if err != nil {
		b.Fatal(err)
	}
	bb, err := board.Create(b.TempDir()+"/blackboard.json", board.Run{ID: "bench"}, board.Options{Sync: sync})
	if err != nil {
		b.Fatal(err)
	}
	defer bb.Close()
	content := strings.Repeat("x", 200)
	for i := 0; i < size; i++ {
		bb.Append(board.Entry{Section: "prefill", Author: "bench", Content: content})
	}
	span := &span{}
	r := &engine.Runner{Prog: prog, Board: bb, Log: zerolog.Nop(), Workdir: b.TempDir(), Observer: span}
	b.ReportAllocs()
	b.ResetTimer()
	if err := r.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	// From the first step's start to the last one's end: the run's final
	// save (once per run, not per step) is left out.
	b.ReportMetric(float64(span.last.Sub(span.first).Nanoseconds())/float64(2*b.N), "ns/step")
}

// span notes when the first step started and the last one finished.
type span struct{ first, last time.Time }

func (s *span) StepStarted(string, int, string) {
	if s.first.IsZero() {
		s.first = time.Now()
	}
}
func (s *span) StepFinished(board.StepRecord) { s.last = time.Now() }

// BenchmarkParallel runs a group of 100, 1000 and 10,000 trivial
// children: ns/child is the engine's overhead per child, which must stay
// flat as the group grows (nothing done per sibling).
func BenchmarkParallel(b *testing.B) {
	for _, n := range []int{100, 1000, 10_000} {
		b.Run(fmt.Sprintf("children=%d", n), func(b *testing.B) { benchParallel(b, n) })
	}
}

func benchParallel(b *testing.B, n int) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "version: 1\nlimits: {max_steps: %d}\nsteps:\n  - label: group\n    parallel:\n", 2*n)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "      - {label: c%d, type: echo, text: x}\n", i)
	}
	prog, err := engine.Compile("bench.yaml", []byte(sb.String()), registry())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		bb, err := board.Create(b.TempDir()+"/blackboard.json", board.Run{ID: "bench"}, board.Options{})
		if err != nil {
			b.Fatal(err)
		}
		r := &engine.Runner{Prog: prog, Board: bb, Log: zerolog.Nop(), Workdir: b.TempDir()}
		b.StartTimer()
		if err := r.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if got := len(bb.Steps()); got != n+1 {
			b.Fatalf("%d steps ran, want %d", got, n+1)
		}
		bb.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/child")
}

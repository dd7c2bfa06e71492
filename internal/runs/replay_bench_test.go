//go:build linux

package runs_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/runs"
	"github.com/rs/zerolog"
)

// BenchmarkReplayOffline replays offline the run of failingAtTheEnd(n)
// (the plans of the 1k/10k/100k figures of docs/benchmarks.md), as
// `runner replay --offline` does: the recording read, the plan compiled,
// the run interpreted again, checked step by step and as a whole board,
// the replay's board written. allocs/step should stay the same from 1k to
// 10k: a check that scans the recording, or the board, per step would
// show here first.
func BenchmarkReplayOffline(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			_, dir := failedRun(b, n)
			path := filepath.Join(dir, "bb.json")
			out := filepath.Join(dir, "replay.json")
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				rep, err := runs.Replay(context.Background(), path, runs.ReplayOptions{Options: replay.Options{Out: out, Log: zerolog.Nop()}})
				if err != nil {
					b.Fatal(err)
				}
				if !rep.Matched() {
					b.Fatal(rep.Divergence.String())
				}
				rep.Board.Close()
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N)/float64(n), "allocs/step")
		})
	}
}

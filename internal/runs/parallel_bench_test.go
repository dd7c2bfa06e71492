//go:build linux

package runs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/runs"
)

// BenchmarkRunParallel runs, as `runner run` does (board, journal, the
// running file, the live board's socket), a plan of one parallel group of
// 100, 1,000 and 10,000 children, each a board write: cpu-ns/child (the
// process's user and system time, steadier than the wall time on a shared
// machine) must stay flat as the group grows.
func BenchmarkRunParallel(b *testing.B) {
	benchParallel(b, []int{100, 1000, 10_000}, "{label: c%[1]d, type: board, op: write, key: k%[1]d, value: v}", cpuTime)
}

// BenchmarkRunParallelCommands is BenchmarkRunParallel with children that
// are processes (`run: 'true'`), 100 and 1,000 of them: cpu-ns/child is
// runner's CPU and its children's, and grows with the group where
// starting a child costs more for each sibling (every child's exec
// closes its copy of each descriptor runner holds).
func BenchmarkRunParallelCommands(b *testing.B) {
	benchParallel(b, []int{100, 1000}, "{label: c%d, type: command, run: 'true'}", cpuTimeWithChildren)
}

func benchParallel(b *testing.B, sizes []int, child string, cpuTime func() time.Duration) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("children=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			var sb strings.Builder
			fmt.Fprintf(&sb, "version: 1\nlimits: {max_steps: %d}\nsteps:\n  - label: group\n    parallel:\n", 2*n)
			for i := range n {
				sb.WriteString("      - " + fmt.Sprintf(child, i) + "\n")
			}
			plan := filepath.Join(dir, "plan.yaml")
			if err := os.WriteFile(plan, []byte(sb.String()), 0o644); err != nil {
				b.Fatal(err)
			}
			var cpu time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				out := filepath.Join(dir, fmt.Sprint(i), "bb.json")
				before := cpuTime()
				res, err := runs.Start(context.Background(), runs.Options{Plan: plan, Workdir: dir, Board: out}, runs.Env{})
				cpu += cpuTime() - before
				if err != nil || res.Err != nil {
					b.Fatal(err, res.Err)
				}
				b.StopTimer()
				if got, st := len(res.Board.Steps()), res.Board.Run().Status; got != n+1 || st != board.StatusSucceeded {
					b.Fatalf("%s with %d steps, want succeeded with %d", st, got, n+1)
				}
				os.RemoveAll(filepath.Dir(out))
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/child")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n), "cpu-ns/child")
		})
	}
}

// cpuTime is the user and system time this process has used.
func cpuTime() time.Duration {
	var u syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// cpuTimeWithChildren is cpuTime with that of the children it waited for.
func cpuTimeWithChildren() time.Duration {
	var u syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &u)
	return cpuTime() + time.Duration(u.Utime.Nano()+u.Stime.Nano())
}

// BenchmarkRunCommands runs, as `runner run` does, a plan of 200
// sequential `command` steps running `true`: cpu-ns/step is runner's
// own cost per step with the process it starts, the figure compared with
// `sh -c true` from a shell loop (docs/benchmarks.md).
func BenchmarkRunCommands(b *testing.B) {
	const n = 200
	dir := b.TempDir()
	var sb strings.Builder
	sb.WriteString("version: 1\nsteps:\n")
	for i := range n {
		fmt.Fprintf(&sb, "  - {label: s%d, type: command, run: 'true'}\n", i)
	}
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	var cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		out := filepath.Join(dir, fmt.Sprint(i), "bb.json")
		before := cpuTime()
		res, err := runs.Start(context.Background(), runs.Options{Plan: plan, Workdir: dir, Board: out}, runs.Env{})
		cpu += cpuTime() - before
		if err != nil || res.Err != nil {
			b.Fatal(err, res.Err)
		}
		b.StopTimer()
		if got, st := len(res.Board.Steps()), res.Board.Run().Status; got != n || st != board.StatusSucceeded {
			b.Fatalf("%s with %d steps, want succeeded with %d", st, got, n)
		}
		os.RemoveAll(filepath.Dir(out))
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n), "cpu-ns/step")
}

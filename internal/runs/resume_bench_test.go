//go:build linux

package runs_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/runs"
)

// failingAtTheEnd is a plan of n-1 board steps (writes, reads, branches,
// each with an expression) and a last command step that fails until a
// file "marker" exists in the workdir.
func failingAtTheEnd(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nname: big\nvars: {who: me, n: 3}\nlimits: {max_steps: %d}\nsteps:\n", n+10)
	for i := range n - 1 {
		switch {
		case i%3 == 0:
			fmt.Fprintf(&b, "  - {label: s%d, type: board, op: write, key: 'k%d', value: 'hi ${{ vars.who }} %d'}\n", i, i, i)
		case i%3 == 1:
			fmt.Fprintf(&b, "  - {label: s%d, type: board, op: read, key: 'k${{ steps.s%d.visits * 0 + %d }}'}\n", i, i-1, i-1)
		default:
			fmt.Fprintf(&b, "  - label: s%d\n    type: branch\n    cases:\n      - {when: 'steps.s%d.ok && vars.n > 100', goto: fail}\n    default: s%d\n", i, i-1, i+1)
		}
	}
	fmt.Fprintf(&b, "  - {label: s%d, type: command, run: 'test -f marker'}\n", n-1)
	return b.String()
}

// failedRun runs failingAtTheEnd(n) in a new directory and returns its
// saved board, the run failed at its last step, and the directory.
func failedRun(tb testing.TB, n int) (board []byte, dir string) {
	dir = tb.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(failingAtTheEnd(n)), 0o644); err != nil {
		tb.Fatal(err)
	}
	res, err := runs.Start(context.Background(), runs.Options{Plan: plan, Workdir: dir, Board: filepath.Join(dir, "bb.json")}, runs.Env{})
	if err != nil {
		tb.Fatal(err)
	}
	if res.Err == nil {
		tb.Fatal("the run did not fail")
	}
	res.Board.Close()
	b, err := os.ReadFile(filepath.Join(dir, "bb.json"))
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "marker"), nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	return b, dir
}

// BenchmarkResume resumes a run of n steps that failed at its last one:
// one step left to run. What it costs should not grow with n more than
// reading the board once does.
func BenchmarkResume(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			saved, dir := failedRun(b, n)
			path := filepath.Join(dir, "bb.json")
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				if err := os.WriteFile(path, saved, 0o644); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				res, err := runs.Resume(context.Background(), path, runs.ResumeOptions{}, runs.Env{Warnings: io.Discard})
				if err != nil || res.Err != nil {
					b.Fatalf("resume: %v %v", err, res.Err)
				}
				res.Board.Close()
			}
		})
	}
}

// TestResumeDoesNotRewriteTheBoardFirst: resuming reads the saved run once
// and goes on appending to its journal; the whole file is written once,
// when the run ends, not also before the step left to run (which, with
// a second read of the file, made resuming a 100k-step run to re-run one
// step cost more than the whole run). The step checks, as it runs, that
// blackboard.json is still the file the failed run left.
func TestResumeDoesNotRewriteTheBoardFirst(t *testing.T) {
	dir := t.TempDir()
	plan := writePlan(t, dir, `version: 1
steps:
  - {label: a, type: board, op: write, key: k, value: v}
  - {label: b, type: command, run: 'test -f marker && test "$(stat -c %i bb.json)" = "$(cat inode)"'}
`)
	path := filepath.Join(dir, "bb.json")
	res, err := runs.Start(context.Background(), runs.Options{Plan: plan, Workdir: dir, Board: path}, runs.Env{})
	if err != nil {
		t.Fatal(err)
	}
	res.Board.Close()
	if res.Err == nil {
		t.Fatal("the run did not fail")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ino := fi.Sys().(*syscall.Stat_t).Ino
	if err := os.WriteFile(filepath.Join(dir, "inode"), []byte(fmt.Sprintln(ino)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "marker"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = runs.Resume(context.Background(), path, runs.ResumeOptions{}, runs.Env{Warnings: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	res.Board.Close()
	if res.Err != nil {
		t.Fatalf("the resumed step found blackboard.json rewritten before it ran: %v", res.Err)
	}
	// The end of the run still leaves the whole run in the file.
	saved, err := board.Parse(mustRead(t, path))
	if err != nil {
		t.Fatal(err)
	}
	if saved.Run().Status != board.StatusSucceeded || len(saved.Steps()) != 3 {
		t.Errorf("the file after the resume: status %s, %d steps; want succeeded, 3", saved.Run().Status, len(saved.Steps()))
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

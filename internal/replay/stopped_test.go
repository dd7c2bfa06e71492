package replay_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/steps"
	"github.com/rs/zerolog"
)

// stopAt is the moment a recorded run is stopped: when a step visit of
// label starts, when its record is saved, or when its parent's n-th
// child record is saved (label is then the parent).
type stopAt struct {
	event string // "started", "finished" or "children"
	label string
	n     int
}

func (s stopAt) String() string {
	if s.event == "children" {
		return fmt.Sprintf("after %d children of %s", s.n, s.label)
	}
	return s.event + " " + s.label
}

// stopper is the observer that stops the run at its moment, once, from
// inside the engine: the timeout or an interrupt cancels the run's
// context, a kill copies the saved run as the process would leave it.
// Nothing races a clock.
type stopper struct {
	at       stopAt
	how      string // "timeout", "interrupt" or "kill"
	cancel   context.CancelCauseFunc
	src, dst string // the board's file and where a kill leaves its copy

	mu       sync.Mutex
	children int
	done     bool
	err      error
}

func (s *stopper) StepStarted(label string, _ int, _ string) {
	if s.at.event == "started" && label == s.at.label {
		s.stop()
	}
}

func (s *stopper) StepFinished(rec board.StepRecord) {
	switch {
	case s.at.event == "finished" && rec.Label == s.at.label:
		s.stop()
	case s.at.event == "children" && rec.Parent == s.at.label:
		s.mu.Lock()
		s.children++
		n := s.children
		s.mu.Unlock()
		if n == s.at.n {
			s.stop()
		}
	}
}

func (s *stopper) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.done = true
	switch s.how {
	case "timeout":
		s.cancel(engine.TimeoutCause(stopTimeout))
	case "interrupt":
		s.cancel(engine.ErrInterrupted)
	case "kill":
		// The record just saved is the last line of the journal: what a
		// SIGKILL now leaves on disk.
		for _, p := range []string{s.src, board.JournalPath(s.src)} {
			q := filepath.Join(s.dst, filepath.Base(p))
			if err := copyFile(p, q); err != nil && !errors.Is(err, os.ErrNotExist) {
				s.err = err
			}
		}
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// stopTimeout is the plans' limits.timeout: never reached on its own, it
// is the one the stopper's timeout names (as the real one would).
const stopTimeout = time.Hour

// A for_each (or a group) stopped by limits.timeout, an interrupt or a
// kill at any moment of its visit (before its items, while one runs,
// between items, after the last item and before its own record, after
// it) replays offline to an exact match, as stopped and once resumed. A
// for_each stopped after its last item once replayed as failed where the
// recording says canceled, or went on past it and then lost the resumed
// run's rerun of it (TestReplayRandomPlans, seed 1795671776812018520,
// plan 110).
func TestReplayFanOutStoppedAnywhere(t *testing.T) {
	plans := []struct {
		name, steps string
		at          []stopAt
	}{
		{"for_each failing items", `
  - {label: each, type: command, run: "echo ${{ item }}; exit 1", continue_on_error: true, for_each: '["a", "b"]'}`,
			[]stopAt{{"started", "each", 0}, {"started", "each[0]", 0}, {"children", "each", 1}, {"children", "each", 2}, {"finished", "each", 0}}},
		{"for_each one at a time", `
  - {label: each, type: command, run: "echo ${{ item }}", max_concurrency: 1, for_each: '["a", "b", "c"]'}`,
			[]stopAt{{"children", "each", 1}, {"started", "each[1]", 0}, {"children", "each", 3}, {"finished", "each", 0}}},
		{"for_each of a sequence", `
  - label: outer
    continue_on_error: true
    parallel:
      - label: each
        for_each: '["a", "b"]'
        fail_fast: false
        steps:
          - {label: say, type: command, run: "echo ${{ item }}"}
          - {label: boom, type: command, run: "exit 1"}
      - {label: beside, type: board, op: write, key: k, value: x}`,
			[]stopAt{{"children", "each[0]", 2}, {"children", "each", 1}, {"children", "each", 2}, {"finished", "each", 0}}},
		{"for_each of a group", `
  - label: each
    for_each: '["a", "b"]'
    parallel:
      - {label: say, type: command, run: "echo ${{ item }}"}
      - {label: put, type: board, op: write, key: 'k-${{ item }}', value: '${{ item }}'}`,
			[]stopAt{{"children", "each[1]", 2}, {"children", "each", 2}, {"finished", "each", 0}}},
		{"parallel group", `
  - label: group
    parallel:
      - {label: one, type: command, run: "echo one"}
      - {label: two, type: command, run: "echo two; exit 1"}`,
			[]stopAt{{"children", "group", 1}, {"children", "group", 2}, {"finished", "group", 0}}},
	}
	for _, p := range plans {
		src := "version: 1\nname: stopped\nlimits: {timeout: " + stopTimeout.String() + "}\nsteps:\n" +
			`  - {label: first, type: command, run: "echo first"}` + p.steps + "\n" +
			`  - {label: after, type: command, run: "echo after"}` + "\n"
		for _, at := range p.at {
			for _, how := range []string{"timeout", "interrupt", "kill"} {
				for _, resumed := range []bool{false, true} {
					if how == "kill" && !resumed {
						continue // a killed run is replayed up to where it ends: see the resumed case
					}
					name := fmt.Sprintf("%s/%s %s", p.name, how, at)
					if resumed {
						name += ", resumed"
					}
					t.Run(name, func(t *testing.T) { stoppedReplays(t, src, at, how, resumed) })
				}
			}
		}
	}
}

func stoppedReplays(t *testing.T, src string, at stopAt, how string, resumed bool) {
	prog, err := engine.Compile("plan.yaml", []byte(src), steps.Registry())
	if err != nil {
		t.Fatal(err)
	}
	wd, dir := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "blackboard.json")
	run := board.Run{ID: "stopped", PlanPath: "plan.yaml", PlanSource: src, PlanSHA256: prog.Plan.SHA256, Workdir: wd}
	b, err := board.Create(path, run, board.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	killed := t.TempDir()
	s := &stopper{at: at, how: how, cancel: cancel, src: path, dst: killed}
	runErr := (&engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: wd, Observer: s}).Run(ctx)
	b.Close()
	if !s.done {
		t.Fatalf("the run never came to %s (run error: %v)", at, runErr)
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	if how == "kill" {
		path = filepath.Join(killed, "blackboard.json")
	} else if runErr == nil {
		t.Fatalf("the %s at %s did not stop the run", how, at)
	}
	if resumed {
		b, err := board.Open(path, board.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: wd}
		if err := r.Restore(); err != nil {
			t.Fatalf("resume: %v", err)
		}
		if err := b.UpdateRun(func(run *board.Run) { run.Status, run.Error, run.FinishedAt = board.StatusRunning, "", nil }); err != nil {
			t.Fatal(err)
		}
		r.Run(context.Background()) // a failure as the plan says; the replay compares it
		b.Close()
	}
	saved, err := board.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Run(context.Background(), saved, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Matched() {
		var steps []string
		for _, r := range saved.Steps() {
			steps = append(steps, fmt.Sprintf("%s#%d %s %q", r.Label, r.Visit, r.Status, r.Error))
		}
		t.Fatalf("%s\nrecorded (run %s: %s):\n  %s", rep.Divergence.String(), saved.Run().Status, saved.Run().Error,
			strings.Join(steps, "\n  "))
	}
}

package runs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/runs"
)

func writePlan(t *testing.T, dir, src string) string {
	t.Helper()
	p := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const twoSteps = `version: 1
vars: {n: 1}
steps:
  - {label: a, type: command, run: echo a}
  - {label: b, type: command, run: "exit ${{ vars.n }}"}
`

// What New refuses, it refuses before anything is written, as a usage
// error the CLI exits 2 for; a plan's problems come as plans.Errors.
func TestNewRefusesBadRequests(t *testing.T) {
	dir := t.TempDir()
	plan := writePlan(t, dir, twoSteps)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\nsteps:\n  - {label: a, type: nope}\n"), 0o644)
	tests := []struct {
		name      string
		o         runs.Options
		want      string
		planError bool
	}{
		{"bad plan", runs.Options{Plan: bad}, "unknown step type", true},
		{"no plan", runs.Options{Plan: filepath.Join(dir, "none.yaml")}, "no such file", true},
		{"unknown var", runs.Options{Plan: plan, Vars: map[string]string{"m": "2"}}, `the plan has no var "m"`, false},
		{"var of the wrong type", runs.Options{Plan: plan, Vars: map[string]string{"n": "x"}}, "--var n=x", false},
		{"unknown agent", runs.Options{Plan: plan, Agents: plans.AgentOverrides{"coder": {"model": "m"}}}, "coder", false},
		{"offline without reuse", runs.Options{Plan: plan, Offline: true}, "--offline", false},
		{"workdir not a directory", runs.Options{Plan: plan, Workdir: plan}, "not a directory", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runs.New(tt.o)
			var pe *runs.PlanError
			if err == nil || !runs.IsUsage(err) || !strings.Contains(err.Error(), tt.want) || errors.As(err, &pe) != tt.planError {
				t.Fatalf("New: %v; want a usage error saying %q (plan error: %v)", err, tt.want, tt.planError)
			}
		})
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, ".runner")); len(entries) > 0 {
		t.Error("a refused run wrote its directory")
	}
}

// The run's id, start time and board path come from the clock and the
// options; a workdir on other hosts (Temporal workers) need not exist.
func TestNewSetsUpTheRun(t *testing.T) {
	dir := t.TempDir()
	plan := writePlan(t, dir, twoSteps)
	at := time.Date(2026, 2, 4, 10, 0, 0, 0, time.UTC)
	r, err := runs.New(runs.Options{Plan: plan, Workdir: dir, Now: func() time.Time { return at }, Vars: map[string]string{"n": "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Record.StartedAt.Equal(at) || r.Record.Workdir != dir || r.Vars["n"] != 0 ||
		r.Board != filepath.Join(dir, ".runner", "runs", r.Record.ID, "blackboard.json") {
		t.Errorf("run %+v, board %s, vars %v", r.Record, r.Board, r.Vars)
	}
	if _, err := os.Stat(r.Board); !os.IsNotExist(err) {
		t.Errorf("New wrote the board: %v", err)
	}
	elsewhere := filepath.Join(dir, "on-the-workers")
	r, err = runs.New(runs.Options{Plan: plan, Workdir: elsewhere, WorkdirElsewhere: true})
	if err != nil || r.Record.Workdir != elsewhere {
		t.Fatalf("WorkdirElsewhere: %v, workdir %q", err, r.Record.Workdir)
	}
}

// A failed run is resumed after its last completed step; a run that
// succeeded is not resumed again; a changed plan needs Force.
func TestStartThenResume(t *testing.T) {
	dir := t.TempDir()
	plan := writePlan(t, dir, twoSteps)
	ctx := context.Background()
	res, err := runs.Start(ctx, runs.Options{Plan: plan, Workdir: dir}, runs.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status() != board.StatusFailed || res.Err == nil || len(res.Board.Steps()) != 2 {
		t.Fatalf("status %s, err %v, %d steps; want b to fail", res.Status(), res.Err, len(res.Board.Steps()))
	}
	path := res.Board.Path()

	// The plan changes: refused without Force.
	writePlan(t, dir, strings.Replace(twoSteps, `"exit ${{ vars.n }}"`, "echo fixed", 1))
	if _, err := runs.Resume(ctx, path, runs.ResumeOptions{}, runs.Env{}); !runs.IsUsage(err) || !strings.Contains(err.Error(), "changed since run") {
		t.Fatalf("resume of a changed plan: %v", err)
	}
	r, err := runs.Reopen(path, runs.ResumeOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Note, "--force") {
		t.Errorf("note %q", r.Note)
	}
	res, err = r.Execute(ctx, runs.Env{})
	if err != nil || res.Status() != board.StatusSucceeded {
		t.Fatalf("resume: %v, status %s (%v)", err, res.Status(), res.Err)
	}
	var ran []string
	for _, s := range res.Board.Steps() {
		ran = append(ran, s.Label+" "+s.Status)
	}
	if got := strings.Join(ran, ", "); got != "a succeeded, b failed, b succeeded" {
		t.Errorf("steps: %s; want a once, b again", got)
	}
	if _, err := runs.Reopen(path, runs.ResumeOptions{}); !errors.Is(err, runs.ErrSucceeded) {
		t.Errorf("resume of a run that succeeded: %v", err)
	}
}

// A run is owned by one process: a second Reopen while the first holds
// the run is refused, and Close lets go.
func TestReopenOwnsTheRun(t *testing.T) {
	dir := t.TempDir()
	plan := writePlan(t, dir, twoSteps)
	res, err := runs.Start(context.Background(), runs.Options{Plan: plan, Workdir: dir}, runs.Env{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := runs.Reopen(res.Board.Path(), runs.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runs.Reopen(res.Board.Path(), runs.ResumeOptions{}); !runs.IsUsage(err) || !strings.Contains(err.Error(), "is live") {
		t.Errorf("second owner: %v; want refused as live", err)
	}
	first.Close()
	second, err := runs.Reopen(res.Board.Path(), runs.ResumeOptions{})
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	second.Close()
}

// A run being resumed by another process is listed as running and live,
// not as it last stopped (its file says failed until the resume ends);
// the record of the process that ran it before, which took the run
// before it stopped, does not count.
func TestListShowsARunBeingResumed(t *testing.T) {
	dir := t.TempDir()
	plan := writePlan(t, dir, twoSteps)
	res, err := runs.Start(context.Background(), runs.Options{Plan: plan, Workdir: dir}, runs.Env{})
	if err != nil {
		t.Fatal(err)
	}
	path := res.Board.Path()
	stopped := *res.Board.Run().FinishedAt
	other := os.Getppid() // a live process that is not this one
	cases := []struct {
		name   string
		since  time.Time
		status string
		live   bool
	}{
		{"took it after it stopped: a resume", stopped.Add(time.Second), board.StatusRunning, true},
		{"took it before it stopped: the run itself", stopped.Add(-time.Second), board.StatusFailed, false},
	}
	for _, c := range cases {
		l, err := boardlock.TryLock(path, boardlock.Owner{Kind: boardlock.OwnerRun, PID: other, Since: c.since})
		if err != nil {
			t.Fatal(err)
		}
		list, err := runs.List(dir)
		l.Unlock()
		if err != nil || len(list) != 1 {
			t.Fatalf("%s: %v %+v", c.name, err, list)
		}
		if list[0].Status != c.status || list[0].Live != c.live {
			t.Errorf("%s: listed %s (live %v), want %s (live %v)", c.name, list[0].Status, list[0].Live, c.status, c.live)
		}
		if s := runs.SummaryOf(path, dir); s.Status != c.status || s.ID != list[0].ID {
			t.Errorf("%s: SummaryOf says %s %s", c.name, s.ID, s.Status)
		}
	}
}

// A run whose steps ran on hosts (on Temporal) is listed with them, in
// the order it first used each; a run in one process with none.
func TestListShowsHosts(t *testing.T) {
	cases := []struct {
		name   string
		hosts  []string // of the run's step records, in order
		status string
	}{
		{"in one process", []string{"", ""}, "succeeded"},
		{"one host", []string{"h1", "", "h1"}, "succeeded on host h1"},
		{"moved to another host and back", []string{"h1", "h2", "h1"}, "succeeded on hosts h1, h2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			now := time.Now().UTC()
			id := board.NewID(now)
			path := filepath.Join(runs.RunsDir(dir), id, "blackboard.json")
			os.MkdirAll(filepath.Dir(path), 0o755)
			b, err := board.Create(path, board.Run{ID: id, PlanPath: "plan.yaml", Status: board.StatusRunning, StartedAt: now}, board.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i, h := range c.hosts {
				label := fmt.Sprint("s", i)
				if err := b.FinishStep(board.StepRecord{Label: label, Visit: 1, Status: board.StatusSucceeded, StartedAt: now, FinishedAt: now, Host: h},
					board.Entry{Section: "steps", Role: "step", Label: label}); err != nil {
					t.Fatal(err)
				}
			}
			b.UpdateRun(func(r *board.Run) { r.Status, r.FinishedAt = board.StatusSucceeded, &now })
			if err := b.Save(); err != nil {
				t.Fatal(err)
			}
			b.Close()
			list, err := runs.List(dir)
			if err != nil || len(list) != 1 {
				t.Fatalf("%v %+v", err, list)
			}
			if got := list[0].StatusText(); got != c.status {
				t.Errorf("listed %q, want %q", got, c.status)
			}
		})
	}
}

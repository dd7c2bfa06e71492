package runner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner"
)

const twoSteps = `version: 1
name: two
vars:
  n: 1
steps:
  - label: first
    type: command
    run: echo one
  - label: second
    type: command
    run: exit 3
`

// How Run reports each way a run can go: not started (nil blackboard),
// or started and ended otherwise than succeeded (a blackboard and why).
func TestRunOutcomes(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name    string
		plan    string
		ctx     context.Context
		o       runner.Options
		started bool
		status  string
		err     string // a part of the error
		// problems: the error is the plan's Problems.
		problems bool
	}{
		{name: "a failing step", plan: twoSteps, started: true, status: "failed", err: "step second"},
		{name: "canceled", plan: twoSteps, ctx: canceled, started: true, status: "interrupted", err: "interrupted"},
		{name: "a var of the wrong type", plan: twoSteps, o: runner.Options{Vars: map[string]string{"n": "x"}}, err: "n"},
		{name: "an unknown var", plan: twoSteps, o: runner.Options{Vars: map[string]string{"m": "1"}}, err: "m"},
		{name: "a bad agent override", plan: twoSteps, o: runner.Options{Agents: []string{"writer.colour=red"}}, err: "colour"},
		{name: "a plan with problems", plan: strings.Replace(twoSteps, "exit 3", "${{ steps.frist.output }}", 1), err: "frist", problems: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			plan := filepath.Join(dir, "plan.yaml")
			if err := os.WriteFile(plan, []byte(c.plan), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx := c.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			c.o.Workdir = dir
			bb, err := runner.Run(ctx, plan, c.o)
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("err = %v, want one with %q", err, c.err)
			}
			var ps runner.Problems
			if errors.As(err, &ps) != c.problems {
				t.Errorf("err = %#v, want Problems: %v", err, c.problems)
			}
			if (bb != nil) != c.started {
				t.Fatalf("blackboard = %v, want one: %v", bb, c.started)
			}
			if bb == nil {
				return
			}
			if bb.Status() != c.status || bb.Err() == nil || bb.Err().Error() != err.Error() {
				t.Errorf("status %s, Err %v; want %s and %v", bb.Status(), bb.Err(), c.status, err)
			}
			// The saved file says the same.
			saved, err := runner.Open(filepath.Dir(bb.Path()))
			if err != nil {
				t.Fatal(err)
			}
			if saved.ID() != bb.ID() || saved.Status() != c.status || saved.Err() == nil {
				t.Errorf("saved run %s %s %v, want %s %s and an error", saved.ID(), saved.Status(), saved.Err(), bb.ID(), c.status)
			}
		})
	}
}

func TestLoadProblemsAreAtFileLineCol(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(strings.Replace(twoSteps, "exit 3", "${{ steps.frist.output }}", 1)), 0o644)
	_, err := runner.Load(plan, nil)
	var ps runner.Problems
	if !errors.As(err, &ps) || len(ps) != 1 {
		t.Fatalf("err = %#v, want one problem", err)
	}
	if want := plan + ":11:"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %q, want it at %s", err, want)
	}
	if _, err := runner.Load(filepath.Join(dir, "missing.yaml"), nil); err == nil || errors.As(err, &ps) {
		t.Errorf("a missing file: err = %v, want an error that is no Problems", err)
	}
}

package runs_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/runs"
)

// A resume compiles the unchanged plan's expressions only when a step
// uses them (engine.CompileChecked), but a plan edited since the run
// started is refused as before, and with --force it is checked whole:
// a mistake in a step the restart never reaches (one already run, or a
// branch not taken) still refuses the resume, at its line.
func TestResumeOfAnEditedPlan(t *testing.T) {
	const plan = `version: 1
vars: {f: marker}
steps:
  - {label: a, type: command, run: "echo a"}
  - label: br
    type: branch
    cases:
      - {when: "steps.a.ok", goto: b}
    default: never
  - {label: never, type: command, run: "echo never"}
  - {label: b, type: command, run: "test -f ${{ vars.f }} && echo ${{ steps.a.output }}"}
`
	cases := []struct {
		name   string
		edit   func(string) string
		force  bool
		want   string // error; "" to resume
		status string
	}{
		{"unchanged", func(s string) string { return s }, false, "", board.StatusSucceeded},
		{"edited, without --force", func(s string) string { return strings.Replace(s, "echo never", "echo x", 1) }, false, "changed since run", ""},
		{"a mistake in a step already run, --force", func(s string) string {
			return strings.Replace(s, `"echo a"`, `"echo ${{ vars.nope }}"`, 1)
		}, true, "plan.yaml:4:", ""},
		{"a mistake in a branch not taken, --force", func(s string) string {
			return strings.Replace(s, `"echo never"`, `"echo ${{ steps.a.nope }}"`, 1)
		}, true, "plan.yaml:10:", ""},
		{"a fix in a branch not taken, --force", func(s string) string { return strings.Replace(s, "echo never", "echo fixed", 1) }, true, "", board.StatusSucceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writePlan(t, dir, plan)
			ctx := context.Background()
			res, err := runs.Start(ctx, runs.Options{Plan: path, Workdir: dir}, runs.Env{})
			if err != nil || res.Status() != board.StatusFailed {
				t.Fatalf("run: %v, %s; want b to fail", err, res.Status())
			}
			res.Board.Close()
			bb := res.Board.Path()
			writePlan(t, dir, tc.edit(plan))
			if err := os.WriteFile(filepath.Join(dir, "marker"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			res, err = runs.Resume(ctx, bb, runs.ResumeOptions{Force: tc.force}, runs.Env{})
			if tc.want != "" {
				var pe *runs.PlanError
				if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.force && !errors.As(err, &pe)) {
					t.Fatalf("resume: %v; want refused with %q", err, tc.want)
				}
				return
			}
			if err != nil || res.Status() != tc.status {
				t.Fatalf("resume: %v, %s (%v)", err, res.Status(), res.Err)
			}
			defer res.Board.Close()
			steps := res.Board.Steps()
			last := steps[len(steps)-1]
			if len(steps) != 4 || last.Label != "b" || last.Status != board.StatusSucceeded ||
				!strings.Contains(last.Inputs["run"], "RUNNER_EXPR_1=marker") || !strings.Contains(last.Inputs["run"], "RUNNER_EXPR_2=a") {
				t.Errorf("%d steps, the last %s %s with %q; want b to run again with its expressions", len(steps), last.Label, last.Status, last.Inputs["run"])
			}
			// The saved run names the plan it went on with.
			res.Board.Close()
			saved, err := board.Load(bb)
			if err != nil {
				t.Fatal(err)
			}
			run, want := saved.Run(), tc.edit(plan)
			if sum := sha256.Sum256([]byte(want)); run.PlanSource != want || run.PlanSHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("saved plan source %q (sha256 %s); want the plan resumed with, %q", run.PlanSource, run.PlanSHA256, want)
			}
		})
	}
}

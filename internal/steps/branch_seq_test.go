package steps

import (
	"errors"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"github.com/rs/zerolog"
)

// A branch inside a sequence jumps among the sequence's steps, end
// finishes the sequence (not the run); a goto out of the sequence, and a
// branch right inside a group, are refused at load.
func TestBranchInSequence(t *testing.T) {
	b, err := runPlan(t, t.TempDir(), `
version: 1
steps:
  - label: group
    parallel:
      - label: seq
        steps:
          - {label: first, type: command, run: echo one}
          - {label: done, type: branch, cases: [{when: 'true', goto: end}]}
          - {label: skipped, type: command, run: echo never}
      - {label: other, type: command, run: echo two}
  - {label: after, type: command, run: "echo ${{ steps.first.output }} ${{ steps.skipped.status }}"}
`, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if out, _, _ := saved(t, b, "after"); out["output"] != "one pending" {
		t.Errorf("after: %v", out["output"])
	}
	for _, tc := range []struct{ step, want string }{
		{"{label: jump, type: branch, cases: [{when: 'true', goto: after}]}", `goto: no step labeled "after" in sequence seq`},
		{"{label: jump, type: branch, default: other}", `default: no step labeled "other" in sequence seq`},
	} {
		src := "version: 1\nsteps:\n  - label: group\n    parallel:\n      - label: seq\n        steps:\n          - {label: a, type: command, run: x}\n          - " +
			tc.step + "\n      - {label: other, type: command, run: x}\n  - {label: after, type: command, run: x}\n"
		_, err := engine.Compile("p.yaml", []byte(src), Registry())
		var list plans.Errors
		if !errors.As(err, &list) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.step, err, tc.want)
		}
	}
	_, err = engine.Compile("p.yaml", []byte("version: 1\nsteps:\n  - label: g\n    parallel:\n      - {label: j, type: branch, default: end}\n"), Registry())
	if err == nil || !strings.Contains(err.Error(), "put it in a sequence, steps:, inside the group") {
		t.Errorf("branch in a group: %v", err)
	}
}

package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
)

// needs make a group a DAG: a child starts after what it needs finished
// (even listed first, even with one slot), reads its output, and is
// skipped, saying why, when a need failed, unless that need's failure
// was tolerated.
func TestNeedsInGroup(t *testing.T) {
	b, err := runPlan(t, `
version: 1
steps:
  - label: group
    max_concurrency: 1
    fail_fast: false
    continue_on_error: true
    parallel:
      - {label: report, type: echo, needs: [build, lint], text: "${{ steps.build.output }}+${{ steps.lint.output }}"}
      - {label: build, type: echo, sleep: 5ms, text: built}
      - {label: lint, type: echo, needs: build, text: "linted ${{ steps.build.output }}"}
      - {label: bad, type: echo, text: boom}
      - {label: after_bad, type: echo, needs: [bad], text: never}
      - {label: tolerated, type: echo, text: boom, continue_on_error: true}
      - {label: after_tolerated, type: echo, needs: [tolerated], text: ran}
`)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, s := range b.Steps() {
		if s.Parent == "group" {
			order = append(order, s.Label+":"+s.Status)
		}
	}
	want := "build:succeeded lint:succeeded report:succeeded bad:failed after_bad:skipped tolerated:failed after_tolerated:succeeded"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("records\n got %s\nwant %s", got, want)
	}
	if _, res := lastResult(t, b, "report"); res["output"] != "built+linted built" {
		t.Errorf("report: %v", res["output"])
	}
	if rec, _ := lastResult(t, b, "after_bad"); rec.Error != "skipped: needs bad, which failed" {
		t.Errorf("after_bad: %q", rec.Error)
	}
}

// needs are checked at load: siblings only, no cycle (named), with
// line:col.
func TestNeedsBadInput(t *testing.T) {
	for _, tc := range []struct{ kids, want string }{
		{"[{label: a, type: echo, text: x, needs: [b]}, {label: b, type: echo, text: x, needs: [c]}, {label: c, type: echo, text: x, needs: a}]",
			"needs form a cycle: a → b → c → a (each needs the next)"},
		{"[{label: a, type: echo, text: x, needs: [a]}]", "p.yaml:4:67: step a needs itself"},
		{"[{label: a, type: echo, text: x, needs: [first]}]", `step a needs "first", which is not a step of its group`},
		{"[{label: a, type: echo, text: x, needs: [bb]}, {label: b, type: echo, text: x}]", `needs "bb", which is not a step of its group (did you mean "b"?)`},
		// Every problem of the group at once: the cycle beside an unknown need.
		{"[{label: a, type: echo, text: x, needs: [b]}, {label: b, type: echo, text: x, needs: [a]}, {label: c, type: echo, text: x, needs: [nope]}]",
			"needs form a cycle: a → b → a (each needs the next)"},
		{"[{label: a, type: echo, text: x, needs: [b]}, {label: b, type: echo, text: x, needs: [a]}, {label: c, type: echo, text: x, needs: [nope]}]",
			`step c needs "nope", which is not a step of its group`},
	} {
		src := "version: 1\nsteps:\n  - {label: first, type: echo, text: x}\n  - {label: g, parallel: " + tc.kids + "}\n"
		_, err := engine.Compile("p.yaml", []byte(src), registry())
		var list plans.Errors
		if !errors.As(err, &list) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.kids, err, tc.want)
		}
	}
	_, err := engine.Compile("p.yaml", []byte("version: 1\nsteps:\n  - {label: a, type: echo, text: x, needs: [b]}\n  - {label: b, type: echo, text: x}\n"), registry())
	if err == nil || !strings.Contains(err.Error(), "needs applies to a child of a parallel group") {
		t.Errorf("top-level needs: %v", err)
	}
}

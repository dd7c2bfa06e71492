package web

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/runs"
)

// The graph page draws the plan with what the run did at each step: a
// group and its children, for_each items, a sub-plan's steps, a for_each
// block's steps, a tolerated failure, the step the run waits at, the
// steps not run yet, and a branch's jump once, to the group it lands on;
// an arrow only where the plan goes on (none from end to fail).
func TestServeGraphShowsEachStepsStatus(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
name: graphy
steps:
  - label: checks
    parallel:
      - {label: vet, type: command, run: "true"}
      - {label: lint, type: command, run: "exit 2", continue_on_error: true}
  - {label: each, type: command, for_each: '${{ ["a","b","c"] }}', run: "echo ${{ item }}"}
  - label: loop
    type: branch
    cases:
      - {when: 'len(steps.each.output) < 0', goto: checks}
      - {when: 'len(steps.each.output) < -1', goto: fail}
  - {label: sub, type: plan, plan: sub.yaml}
  - label: fan
    for_each: '${{ ["x","y"] }}'
    parallel:
      - {label: one, type: command, run: "echo ${{ item }}"}
  - {label: approve, type: input, prompt: "Ship?", form: {properties: {ship: {type: boolean}}, required: [ship]}}
  - {label: after, type: command, run: "true"}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "sub.yaml"), []byte(`version: 1
name: sub
steps:
  - {label: inner, type: command, run: "echo in"}
  - {label: last, type: command, run: "echo out"}
`), 0o644)
	res, err := runs.Start(context.Background(), runs.Options{Plan: plan, Workdir: dir}, runs.Env{})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Board.Run().ID
	c := newClient(t, dir, Options{})
	c.login()
	resp, page := c.do("GET", "/runs/"+id+"/graph", nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, page)
	}
	status := map[string]string{}
	for _, m := range regexp.MustCompile(`data-label="([^"]+)" data-status="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		status[m[1]] = m[2]
	}
	want := map[string]string{"checks": "succeeded", "vet": "succeeded", "lint": "failed", "each": "succeeded",
		"loop": "succeeded", "approve": "waiting", "after": "pending",
		"sub": "succeeded", "sub__inner": "succeeded", "sub__last": "succeeded", "fan": "succeeded", "one": "succeeded"}
	for l, s := range want {
		if status[l] != s {
			t.Errorf("%s is drawn %q, want %q", l, status[l], s)
		}
	}
	for _, s := range []string{`3 items`, `⇢ checks when len(steps.each.output) &lt; 0`, `⚠ failure tolerated`, `id="plan-source"`} {
		if !strings.Contains(page, s) {
			t.Errorf("the graph lacks %q", s)
		}
	}
	if n := strings.Count(page, `class="jump`); n != 2 {
		t.Errorf("the branch's jumps are drawn %d times, want once each (checks, fail)", n)
	}
	// START → checks → each → loop → sub → fan → approve → after → END;
	// FAIL only by the branch's jump.
	var order []string
	for _, m := range regexp.MustCompile(`<div class="(arrow|gap)">|class="(?:node|group)[^"]*" data-label="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if m[1] != "" {
			order = append(order, m[1])
		} else if !strings.Contains(m[2], "__") && m[2] != "vet" && m[2] != "lint" && m[2] != "one" {
			order = append(order, m[2])
		}
	}
	want2 := "START arrow checks arrow each arrow loop arrow sub arrow fan arrow approve arrow after arrow END gap FAIL"
	if got := strings.Join(order, " "); got != want2 {
		t.Errorf("the graph draws\n%s\nwant\n%s", got, want2)
	}
}

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
// group and its children, for_each items, a tolerated failure, the step
// the run waits at, the steps not run yet, and a branch's jump once, to
// the group it lands on.
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
  - {label: approve, type: input, prompt: "Ship?", form: {properties: {ship: {type: boolean}}, required: [ship]}}
  - {label: after, type: command, run: "true"}
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
		"loop": "succeeded", "approve": "waiting", "after": "pending"}
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
	if n := strings.Count(page, `class="jump`); n != 1 {
		t.Errorf("the branch's jump is drawn %d times, want once", n)
	}
}

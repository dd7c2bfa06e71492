package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/replay"
)

// callerPlan calls check.yaml for each of 40 packages, four at a time,
// then reads the calls' outputs in order.
const callerPlan = `version: 1
name: caller
limits: {max_steps: 1000}
steps:
  - label: each
    type: plan
    plan: sub/check.yaml
    for_each: 1..40
    max_concurrency: 4
    vars: {pkg: "p${{ item }}", n: "${{ index }}", gate: "${{ index == 5 ? 'hold' : 'go' }}"}
  - label: last
    type: command
    run: echo "${{ steps.each.counts.succeeded }} ${{ steps.each.outputs[39].verdict }} ${{ steps.each.results[0].outputs.n }}"
`

// calleePlan is the called plan: two steps, a branch and declared outputs.
// Its vet step waits for the file its gate var names (item 5's does not
// exist until the test makes it), so a kill finds that call half done.
const calleePlan = `version: 1
vars: {pkg: none, n: 0, gate: go}
outputs:
  verdict: steps.vet.output
  n: vars.n + 1
steps:
  - {label: build, type: command, run: "sleep 0.02; echo built ${{ vars.pkg }}"}
  - label: decide
    type: branch
    cases:
      - {when: steps.build.ok, goto: vet}
    default: fail
  - {label: never, type: command, run: "echo never"}
  - {label: vet, type: command, run: "while [ ! -f ${{ vars.gate }} ]; do sleep 0.01; done; echo %s ${{ vars.pkg }}"}
`

// stepsByVisit orders a normalised board's step records by label and
// visit: parallel calls' callee steps finish interleaved, and a replay,
// which runs the items one after another in their recorded order,
// interleaves them otherwise (each record's content is still compared).
func stepsByVisit(t *testing.T, normal string) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(normal), &v); err != nil {
		t.Fatal(err)
	}
	if list, ok := v["steps"].([]any); ok {
		sort.SliceStable(list, func(i, j int) bool { return visitOf(list[i]) < visitOf(list[j]) })
	}
	out, _ := json.MarshalIndent(v, "", " ")
	return string(out)
}

func hasStep(b *board.Board, label string) bool {
	for _, s := range b.Steps() {
		if s.Label == label {
			return true
		}
	}
	return false
}

func writeCallPlans(t *testing.T, dir, word string) string {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "sub", "check.yaml"), []byte(fmt.Sprintf(calleePlan, word)), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(callerPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	return plan
}

// A sub-plan called for each of 40 items, killed with SIGKILL in the
// middle of some calls and resumed: every callee step of every call
// succeeds exactly once (a call cut in the middle goes on after its last
// finished step), the outputs come back typed and in order, an offline
// replay of the killed and resumed run matches, and a replay after the
// callee changed diverges at the callee's step, by its CALL/LABEL.
func TestKillSubPlanForEachThenResume(t *testing.T) {
	wd := t.TempDir()
	plan := writeCallPlans(t, wd, "vetted")
	out := filepath.Join(wd, "bb.json")
	os.WriteFile(filepath.Join(wd, "go"), nil, 0o644)
	cmd := exec.Command(binary, "run", plan, "--out", out, "-q")
	cmd.Dir = wd
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("call each[5] never reached its vet step")
		}
		if b, err := board.Load(out); err == nil && hasStep(b, "each[5]/decide") {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed, err := board.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]bool{}
	for _, s := range killed.Steps() {
		before[s.Label] = true
	}
	if killed.Run().Status != "running" || before["last"] || before["each[5]"] || !before["each[5]/build"] {
		t.Fatalf("killed with %d records, status %s: not in the middle of call each[5]", len(killed.Steps()), killed.Run().Status)
	}
	os.WriteFile(filepath.Join(wd, "hold"), nil, 0o644)
	// A callee changed since its calls ran is refused, as a changed plan is.
	writeCallPlans(t, wd, "changed")
	if r := runCLI(t, wd, "resume", out, "-q"); r.code == 0 || !strings.Contains(r.stderr, "sub/check.yaml, called by step each[") ||
		!strings.Contains(r.stderr, "changed since the call ran") || !strings.Contains(r.stderr, "give --force") {
		t.Fatalf("resume with a changed callee: exit %d: %s", r.code, r.stderr)
	}
	writeCallPlans(t, wd, "vetted")
	if r := runCLI(t, wd, "resume", out, "-q"); r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	b, err := board.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if b.Run().Status != "succeeded" {
		t.Fatalf("status %s: %s", b.Run().Status, b.Run().Error)
	}
	ran := map[string]int{}
	for _, s := range b.Steps() {
		ran[s.Label]++
		if s.Status != "succeeded" {
			t.Errorf("%s: %s %s", s.Label, s.Status, s.Error)
		}
	}
	for i := range 40 {
		call := fmt.Sprintf("each[%d]", i)
		for _, l := range []string{call, call + "/build", call + "/decide", call + "/vet"} {
			if ran[l] != 1 {
				t.Errorf("%s recorded %d times, want once", l, ran[l])
			}
		}
		if ran[call+"/never"] != 0 {
			t.Errorf("%s/never ran: the branch's goto inside the callee was not followed", call)
		}
	}
	for _, s := range b.Steps() {
		if strings.HasPrefix(s.Label, "each[3]/") && s.Parent != "each[3]" {
			t.Errorf("%s has parent %q, want the call each[3]", s.Label, s.Parent)
		}
	}
	last := b.Steps()[len(b.Steps())-1]
	if !strings.Contains(string(last.Result), `"output":"40 vetted p40 1"`) {
		t.Errorf("last: %s", last.Result)
	}

	rout := filepath.Join(t.TempDir(), "replay.json")
	if r := runCLI(t, t.TempDir(), "replay", out, "--offline", "--out", rout, "-q"); r.code != 0 {
		t.Fatalf("replay: exit %d: %s", r.code, r.stderr)
	}
	if a, b := stepsByVisit(t, withoutResumeMarks(t, normalBoard(t, out))), stepsByVisit(t, withoutResumeMarks(t, normalBoard(t, rout))); a != b {
		t.Errorf("the replay's board differs:\n%s", replay.UnifiedDiff("recorded", "replayed", a, b))
	}

	// The callee changed: a replay running the steps for real stops at
	// the first callee step that gives another result, named CALL/LABEL.
	writeCallPlans(t, wd, "linted")
	r := runCLI(t, wd, "replay", out, "--workdir", wd, "--out", filepath.Join(t.TempDir(), "r.json"))
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "replay diverged at step each[") ||
		!strings.Contains(r.stdout+r.stderr, "/vet (visit 1)") || !strings.Contains(r.stdout+r.stderr, `+  "output": "linted p`) {
		t.Errorf("changed callee: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// The dry run lists a call's vars, outputs and the callee's steps by the
// labels the run gives them; the graph draws the call as a box holding the
// callee's steps in order, edges in at the first and out of the last.
func TestSubPlanDryRunAndGraph(t *testing.T) {
	plan := filepath.Join(repoRoot(), "examples/review-then-fix/plan.yaml")
	r := runCLI(t, t.TempDir(), "run", plan, "--dry-run")
	for _, want := range []string{
		"2. fix (plan, for_each split(trim(steps.find.output), \"\\n\"), at most 1 at once)",
		"     var package = ${{ item }}",
		"     output patch = steps.propose.output",
		"  1. fix[i]/review (llm)",
		"  3. fix[i]/check (command)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCLI(t, t.TempDir(), "graph", plan)
	for _, want := range []string{
		"  subgraph fix[\"fix (plan)<br/>⇉ for_each",
		"<br/>▣ runs fix.yaml\"]",
		"    fix__review[\"fix/review (llm)\"]",
		"  find --> fix__review",
		"  fix__review --> fix__propose",
		"  fix__check --> summary",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("mermaid lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCLI(t, t.TempDir(), "graph", plan, "--format", "dot")
	for _, want := range []string{"  subgraph cluster_fix {", "  find -> fix__review;", "  fix__check -> summary;"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dot lacks %q:\n%s", want, r.stdout)
		}
	}
}

// The example's calls use the caller's agent where it passes one (its
// fixer for fix.yaml's coder) and the callee's own otherwise, named under
// the call; a script agent's answers keyed by the callee's own label
// reach the callee's steps; the outputs come back typed and in order.
func TestSubPlanAgentsPassedAndOwn(t *testing.T) {
	wd := t.TempDir()
	out := filepath.Join(wd, "bb.json")
	r := runCLI(t, wd, "run", filepath.Join(repoRoot(), "examples/review-then-fix/plan.yaml"), "-q", "--out", out)
	if r.code != 0 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
	b, err := board.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"fix[0]/review": `"agent":"fix/reviewer"`, "fix[0]/propose": `"agent":"fixer"`,
		"fix[1]/review": `"agent":"fix/reviewer"`, "fix[1]/propose": `"agent":"fixer"`,
		"fix[1]":  `"output":{"attempt":2,"package":"printer","patch":"printer: flush the buffer before closing the writer"`,
		"summary": `2 of 2 packages have a fix\nparser: parser: check the token`,
	}
	for _, s := range b.Steps() {
		if w, ok := want[s.Label]; ok {
			if !strings.Contains(string(s.Result), w) {
				t.Errorf("%s: %s lacks %s", s.Label, s.Result, w)
			}
			delete(want, s.Label)
		}
	}
	if len(want) > 0 {
		t.Errorf("no record of %v", want)
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/view/eval"
)

// evalPlan asks a script agent for a diff to calc.txt, applies it and
// runs a check that wants the answer 4.
func evalPlan(diff string) string {
	quoted, _ := json.Marshal(diff)
	return `version: 1
name: fix
agents:
  coder: {provider: script, price: {input: 1000, output: 1000}, responses: [` + string(quoted) + `]}
steps:
  - {label: write, type: llm, agent: coder, prompt: make it 4, output: diff}
  - {label: apply, type: apply_diff, diff: "${{ steps.write.output }}", backup: false}
  - {label: tests, type: test, framework: tap, command: sh check.sh}
`
}

const checkScript = `echo 'TAP version 13'; echo 1..1
if grep -qx 4 calc.txt; then echo 'ok 1 - answer'; else echo 'not ok 1 - answer'; exit 1; fi
`

func diffTo(from, to string) string {
	return "--- a/calc.txt\n+++ b/calc.txt\n@@ -1 +1 @@\n-" + from + "\n+" + to + "\n"
}

// recordRun makes a real run of evalPlan(diff) in a fresh directory and
// returns its blackboard's path.
func recordRun(t *testing.T, diff string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "calc.txt"), []byte("5\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "check.sh"), []byte(checkScript), 0o644)
	os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(evalPlan(diff)), 0o644)
	r := runCLI(t, dir, append([]string{"run", "plan.yaml", "-q"}, args...)...)
	if r.code != exitOK && r.code != exitFailed {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	return blackboardPath(t, r.stdout)
}

// `runner eval RUN --baseline GOLDEN` compares two recorded runs step by
// step and fails (exit 1) when what passed in the golden run does not;
// a run made with another model that does as well is no regression.
func TestEvalAgainstBaseline(t *testing.T) {
	golden := recordRun(t, diffTo("5", "4"))
	fork := recordRun(t, diffTo("5", "4"), "--agent", "coder.model=other")
	wrong := recordRun(t, diffTo("5", "6"))
	broken := recordRun(t, diffTo("7", "4"))
	for _, tc := range []struct {
		name, run   string
		code        int
		verdict     string
		regressions []string
		table       []string
	}{
		{"itself", golden, 0, "same", nil, []string{"verdict: same"}},
		{"another model", fork, 0, "same", nil, []string{"model other, was script", "verdict: same"}},
		{"wrong answer", wrong, exitFailed, "regressed", []string{"tests: failed, was succeeded; tests 0/1, were 1/1", "the run failed; the baseline succeeded"},
			[]string{"REGRESSED failed, was succeeded; tests 0/1, were 1/1", "verdict: regressed"}},
		{"diff refused", broken, exitFailed, "regressed", []string{"apply: failed, was succeeded", "tests: the run did not get here"},
			[]string{"apply", "REGRESSED the run did not get here"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, ".", "eval", tc.run, "--baseline", golden, "--json")
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
			}
			var c eval.Comparison
			if err := json.Unmarshal([]byte(r.stdout), &c); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, r.stdout)
			}
			if c.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s: %+v", c.Verdict, tc.verdict, c)
			}
			for _, w := range tc.regressions {
				if !strings.Contains(strings.Join(c.Regressions, "\n"), w) {
					t.Errorf("regressions %q lack %q", c.Regressions, w)
				}
			}
			if len(tc.regressions) == 0 && len(c.Regressions) != 0 {
				t.Errorf("regressions %q, want none", c.Regressions)
			}
			if len(c.Steps) != 3 || c.Steps[0].Run == nil || c.Steps[0].Run.Tokens == 0 || c.Steps[0].Run.CostUSD == 0 {
				t.Errorf("steps: want 3 with the model step's tokens and cost: %+v", c.Steps)
			}
			tab := runCLI(t, ".", "eval", tc.run, "--baseline", golden)
			for _, w := range tc.table {
				if !strings.Contains(tab.stdout, w) {
					t.Errorf("the table lacks %q:\n%s", w, tab.stdout)
				}
			}
		})
	}
	// Over a set of runs: figures per agent and model.
	r := runCLI(t, ".", "eval", golden, fork, wrong, broken, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var a eval.Aggregate
	if err := json.Unmarshal([]byte(r.stdout), &a); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	type fig struct {
		agent, model           string
		runs, ok, apply, first int
	}
	var got []fig
	for _, g := range append(a.Groups, a.All) {
		got = append(got, fig{g.Agent, g.Model, g.Runs, g.Succeeded, g.ApplySteps, g.FirstTry})
		if g.Tokens == 0 || g.CostUSD == 0 {
			t.Errorf("%s/%s: no tokens or cost: %+v", g.Agent, g.Model, g)
		}
	}
	want := []fig{{"coder", "other", 1, 1, 1, 1}, {"coder", "script", 3, 1, 3, 2}, {"(all)", "(all)", 4, 2, 4, 3}}
	if len(got) != len(want) {
		t.Fatalf("groups %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("group %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if a.All.PassRate != 0.5 || a.All.FirstTryApplyRate != 0.75 {
		t.Errorf("all: pass rate %v, first-try apply rate %v; want 0.5 and 0.75", a.All.PassRate, a.All.FirstTryApplyRate)
	}
	tab := runCLI(t, ".", "eval", golden, fork, wrong, broken)
	if !strings.Contains(tab.stdout, "50% (2/4)") || !strings.Contains(tab.stdout, "75% (3/4)") {
		t.Errorf("table:\n%s", tab.stdout)
	}
	// Bad input says what is wrong.
	for _, args := range [][]string{{"eval"}, {"eval", golden, fork, "--baseline", golden}, {"eval", "nope.json"}} {
		if r := runCLI(t, ".", args...); r.code != exitUsage || r.stderr == "" {
			t.Errorf("%q: exit %d, %q", args, r.code, r.stderr)
		}
	}
}

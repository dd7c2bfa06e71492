package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/steps"
)

const assertAgents = `version: 1
name: assert
agents:
  coder:
    provider: script
    price: {input: 1000, output: 1000}
    responses: ['{"status": "done", "count": 3}']
  judge_ok: {provider: script, responses: ['{"pass": true, "reason": "it greets"}']}
  judge_no: {provider: script, responses: ['{"pass": false, "reason": "it does not greet"}']}
  judge_prose: {provider: script, responses: ['Looks good to me!']}
  judge_bad: {provider: script, responses: ['{"pass": "yes"}']}
steps:
  - {label: hello, type: command, run: echo hello world}
  - {label: gen, type: llm, agent: coder, prompt: give me a status, output: json}
`

// runAssert runs the plan made of assertAgents and the checks given, and
// returns the exit code, stderr, and the assert step's result.
func runAssert(t *testing.T, checks string) (int, string, steps.AssertResult) {
	t.Helper()
	dir := t.TempDir()
	plan := assertAgents + checks
	os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(plan), 0o644)
	r := runCLI(t, dir, "run", "plan.yaml", "--log-format", "console")
	var res steps.AssertResult
	if r.code == exitUsage {
		return r.code, r.stderr, res
	}
	b, err := board.Load(blackboardPath(t, r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range b.Steps() {
		if s.Type == "assert" {
			json.Unmarshal(s.Result, &res)
		}
	}
	return r.code, r.stderr, res
}

// An assert step checks another step's output and result; each failed
// check says what was expected and what came, and fails the run.
func TestAssertStep(t *testing.T) {
	for _, tc := range []struct {
		name, checks string
		code         int
		want         []string // in stderr
	}{
		{"all pass", `
  - label: check
    type: assert
    step: hello
    checks:
      - equals: hello world
      - contains: world
      - matches: "^hello"
      - {of: exit_code, equals: 0}
      - {of: duration_ms, max: 600000}
`, 0, nil},
		{"json output", `
  - label: check
    type: assert
    step: gen
    checks:
      - schema: {type: object, required: [status], properties: {status: {enum: [done]}}}
      - {of: tokens, min: 1, max: 100000}
      - {of: cost_usd, max: 100}
      - {of: output.count, equals: 3}
`, 0, nil},
		{"failures say expected and got", `
  - label: check
    type: assert
    step: hello
    checks:
      - contains: goodbye
      - equals: hi
      - matches: "^bye"
      - {of: exit_code, equals: 1}
      - {of: duration_ms, max: 0}
`, exitFailed, []string{`5 of 5 checks on hello failed`,
			`check 1 (line 20, contains of output): expected text containing "goodbye", got "hello world"`,
			`check 2 (line 21, equals of output): expected "hi", got "hello world"`,
			`check 3 (line 22, matches of output): expected text matching /^bye/, got "hello world"`,
			`check 4 (line 23, equals of exit_code): expected 1, got 0`,
			`check 5 (line 24, max of duration_ms): expected at most 0, got`}},
		{"schema and cost", `
  - label: check
    type: assert
    step: gen
    checks:
      - schema: {type: object, required: [missing]}
      - {of: cost_usd, max: 0.0000001}
      - {of: tokens, max: 1}
`, exitFailed, []string{`check 1 (line 20, schema of output): expected JSON matching the schema, got {"count":3,"status":"done"} (at '': missing property 'missing')`,
			`check 2 (line 21, max of cost_usd): expected at most 1e-07, got`,
			`check 3 (line 22, max of tokens): expected at most 1, got`}},
		{"no cost on a command", `
  - label: check
    type: assert
    step: hello
    checks:
      - {of: cost_usd, max: 1}
      - {of: nope, equals: 1}
`, exitFailed, []string{`reports no cost (only steps that call a model do)`, `has no result field "nope"`}},
		{"judge passes", `
  - label: check
    type: assert
    step: hello
    checks:
      - judge: {agent: judge_ok, rubric: The output greets someone.}
`, 0, nil},
		{"judge fails", `
  - label: check
    type: assert
    step: hello
    checks:
      - judge: {agent: judge_no, rubric: The output greets someone.}
`, exitFailed, []string{`expected a pass from judge judge_no, got fail (it does not greet)`}},
		{"judge unreadable fails closed", `
  - label: check
    type: assert
    step: hello
    checks:
      - judge: {agent: judge_prose, rubric: The output greets someone.}
`, exitFailed, []string{`got no verdict (the judge's verdict is unreadable`, `a judge that gives no verdict fails the check`}},
		{"judge pass not a boolean fails closed", `
  - label: check
    type: assert
    step: hello
    checks:
      - judge: {agent: judge_bad, rubric: The output greets someone.}
`, exitFailed, []string{`the judge's verdict has no boolean "pass"`}},
		{"load errors", `
  - label: check
    type: assert
    step: helo
    checks:
      - {contains: a, matches: b}
      - {of: tokens}
      - {min: 3, max: 1}
      - matches: "("
      - judge: {agent: nobody, rubric: r}
      - {bogus: 1}
`, exitUsage, []string{`step "helo": no step has this label (did you mean "hello"?)`,
			`a check does one thing, this one has contains and matches`,
			`a check needs one of equals, contains, matches, schema, min, max, judge`,
			`min 3 is above max 1: no value can pass`,
			`matches must be a regular expression`,
			`unknown agent "nobody"`,
			`unknown field "bogus" in a check`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr, res := runAssert(t, tc.checks)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if code == 0 && (!res.Passed || res.Failed != 0 || len(res.Checks) == 0) {
				t.Errorf("result %+v: want passed", res)
			}
			if code == exitFailed && (res.Passed || res.Failed == 0) {
				t.Errorf("result %+v: want failed", res)
			}
		})
	}
}

package steps

import (
	"strings"
	"testing"
)

// TestTimedOutAndErrorsSaidOnce: every step its timeout stopped saves
// timed_out: true and reads so in expressions, and no error text repeats
// itself (the engine's timeout or fail_fast cause is not wrapped around
// an error that already is it).
func TestTimedOutAndErrorsSaidOnce(t *testing.T) {
	b, err := runIn(t, t.TempDir(), `
version: 1
steps:
  - {label: cmd, type: command, run: sleep 30, timeout: 300ms, continue_on_error: true}
  - {label: suite, type: test, framework: generic, command: sleep 30, timeout: 300ms, continue_on_error: true}
  - {label: decide, type: branch, cases: [{when: steps.decide.visits > 5, goto: end}]}
  - label: group
    fail_fast: true
    continue_on_error: true
    parallel:
      - {label: bad, type: command, run: "sleep 0.1; exit 3"}
      - {label: slow, type: command, run: sleep 30}
  - {label: quick, type: command, run: "true", timeout: 10s}
  - label: show
    type: command
    run: echo "${{ steps.cmd.timed_out }} ${{ steps.suite.timed_out }} ${{ steps.decide.timed_out }} ${{ steps.quick.timed_out }}"
`)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, tc := range []struct {
		label, wantErr string
		timedOut       bool
	}{
		{"cmd", "timed out after 300ms", true},
		{"suite", "TIMEOUT: `sleep 30` was stopped after ", true},
		{"slow", "canceled: a sibling step failed (fail_fast)", false},
		{"quick", "", false},
	} {
		res, _, errText := saved(t, b, tc.label)
		if got, _ := res["timed_out"].(bool); got != tc.timedOut {
			t.Errorf("%s: saved timed_out = %v, want %v", tc.label, res["timed_out"], tc.timedOut)
		}
		if !strings.Contains(errText, tc.wantErr) {
			t.Errorf("%s: error %q, want %q", tc.label, errText, tc.wantErr)
		}
		for _, phrase := range []string{"timed out", "canceled", "stopped after"} {
			if strings.Count(errText, phrase) > 1 {
				t.Errorf("%s: %q said twice in %q", tc.label, phrase, errText)
			}
		}
	}
	res, _, _ := saved(t, b, "show")
	if out := strings.TrimSpace(res["stdout"].(string)); out != "true true false false" {
		t.Errorf("steps.X.timed_out in expressions = %q, want true true false false", out)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Without runner-temporal, `runner worker` and `runner run --engine
// temporal` say how to build it (the default binary has no Temporal SDK).
func TestTemporalNeedsItsBinary(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte("version: 1\nsteps:\n  - {label: a, type: command, run: echo a}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RUNNER_TEMPORAL", "")
	t.Setenv("PATH", t.TempDir())
	for _, args := range [][]string{
		{"worker", "--temporal", "127.0.0.1:1"},
		{"run", plan, "--engine", "temporal", "--temporal", "127.0.0.1:1"},
	} {
		r := runCLI(t, dir, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "go install github.com/planrunner/runner/temporal/cmd/runner-temporal@latest") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and how to install runner-temporal", args, r.code, r.stderr)
		}
	}
	if r := runCLI(t, dir, "run", plan, "--engine", "spark"); r.code != 2 || !strings.Contains(r.stderr, `--engine "spark": want local or temporal`) {
		t.Errorf("--engine spark: exit %d, %q", r.code, r.stderr)
	}
	// A bad plan is refused before anything is started, as for a local run.
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\nsteps:\n  - {label: a, type: nope}\n"), 0o644)
	if r := runCLI(t, dir, "run", bad, "--engine", "temporal"); r.code != 2 || !strings.Contains(r.stderr, "unknown step type") {
		t.Errorf("bad plan: exit %d, %q", r.code, r.stderr)
	}
}

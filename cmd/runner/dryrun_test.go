package main

import "testing"

// A dry run shows each step with what its type says it would do (every
// built-in type, one plan).
func TestDryRunShowsEveryType(t *testing.T) {
	r := runCLI(t, "testdata", "run", "types.yaml", "--dry-run")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	golden(t, "types.dry-run.golden", r.stdout)
}

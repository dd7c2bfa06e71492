package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// What a run would refuse from the plan alone, validate refuses first, at
// its line, every problem at once; a run refuses it the same way before
// any step.
func TestValidateCatchesWhatARunWould(t *testing.T) {
	for _, name := range []string{"for-each", "needs", "expressions", "form"} {
		t.Run(name, func(t *testing.T) {
			dir := testdata("validate")
			r := runCLI(t, dir, "validate", name+".yaml")
			if r.code != exitUsage {
				t.Fatalf("validate: exit %d, want %d\n%s", r.code, exitUsage, r.stderr)
			}
			golden(t, filepath.Join("validate", name+".golden"), r.stderr)
			run := runCLI(t, t.TempDir(), "run", filepath.Join(dir, name+".yaml"), "--log-format", "console")
			if run.code != exitUsage {
				t.Fatalf("run: exit %d, want %d\n%s", run.code, exitUsage, run.stderr)
			}
			first, _, _ := strings.Cut(r.stderr, "\n")
			if _, msg, _ := strings.Cut(first, ": "); !strings.Contains(run.stderr, msg) {
				t.Errorf("run does not refuse the plan as validate does (%s):\n%s", msg, run.stderr)
			}
		})
	}
}

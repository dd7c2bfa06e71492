package temporal

import (
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// A run's workflow id names its plan, sanitised, and ends with the run's
// id; a plan without a name is named by its file.
func TestWorkflowIDNamesThePlan(t *testing.T) {
	const id = "01JABCDEFGHJKMNPQRSTVWXYZ0"
	tests := []struct {
		name, path, src, want string
	}{
		{"the plan's name", "plans/x.yaml", "version: 1\nname: fix-tests\nsteps:\n  - {label: a, type: command, run: \"true\"}\n", "runner-fix-tests-" + id},
		{"no name: the file's", "plans/nightly.build.yaml", "version: 1\nsteps:\n  - {label: a, type: command, run: \"true\"}\n", "runner-nightly.build-" + id},
		{"spaces, slashes and quotes are dashes", "p.yaml", "version: 1\nname: \"a b/c'd\"\nsteps:\n  - {label: a, type: command, run: \"true\"}\n", "runner-a-b-c-d-" + id},
		{"not ASCII", "p.yaml", "version: 1\nname: réparer\nsteps:\n  - {label: a, type: command, run: \"true\"}\n", "runner-r--parer-" + id},
		{"only punctuation: the run id alone", "p.yaml", "version: 1\nname: \"???\"\nsteps:\n  - {label: a, type: command, run: \"true\"}\n", "runner-" + id},
		{"a long name is cut", "p.yaml", "version: 1\nname: " + strings.Repeat("x", 100) + "\nsteps:\n  - {label: a, type: command, run: \"true\"}\n", "runner-" + strings.Repeat("x", maxIDPlan) + "-" + id},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := WorkflowIDOf(board.Run{ID: id, PlanPath: tt.path, PlanSource: tt.src})
			if got != tt.want {
				t.Errorf("WorkflowIDOf = %q, want %q", got, tt.want)
			}
		})
	}
}

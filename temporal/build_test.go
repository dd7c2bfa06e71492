package temporal

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// A worker whose workflow code is older than the run needs leaves the
// run's task (a panic: Temporal hands the task again) rather than failing
// the run, and says which versions and build; a run that needs this
// version or an older one runs. The dev-server side of it is
// TestDevServerUpgradeKeepsRunsSafe.
func TestWorkflowLeavesNewerRuns(t *testing.T) {
	for _, c := range []struct {
		name string
		need int
		want string // "" the run succeeds
	}{
		{"no version (a client before versions)", 0, ""},
		{"this version", WorkflowCodeVersion(), ""},
		{"a newer version", WorkflowCodeVersion() + 1, "the run needs version " + strconv.Itoa(WorkflowCodeVersion()+1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			s.SetLogger(quietLogger())
			env := s.NewTestWorkflowEnvironment()
			store := DirStore{Dir: t.TempDir()}
			Register(env, &Workflow{Store: store}, &Activities{Store: store})
			env.SetTestTimeout(time.Minute)
			env.SetWorkerOptions(workerOptions)
			src := "version: 1\nsteps:\n  - {label: a, type: board, op: write, key: k, value: v}\n"
			env.ExecuteWorkflow(WorkflowName, Input{Run: newRun(t, src, t.TempDir()), Code: c.need})
			err := env.GetWorkflowError()
			if c.want == "" {
				if err != nil {
					t.Fatalf("the run failed: %v", err)
				}
				return
			}
			var panicked *temporal.PanicError
			if !errors.As(err, &panicked) {
				t.Fatalf("got %v; want a panic (the task is retried), not a failed run", err)
			}
			for _, want := range []string{c.want, "has workflow code version " + strconv.Itoa(WorkflowCodeVersion()), "workflow code " + strconv.Itoa(WorkflowCodeVersion()), hostname()} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%v\ndoes not say %q", err, want)
				}
			}
		})
	}
}

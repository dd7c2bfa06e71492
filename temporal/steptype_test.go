package temporal

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/testutil/steptypetest"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
)

// A step type plugged in from outside package steps, which declares
// neither its schedule nor a bounded run, runs as a normal activity: not
// inline in the workflow, and not as a local activity even when its
// timeout is under --local-steps-under. A pure step beside it runs
// inline.
func TestWorkflowPluggedTypeRunsAsActivity(t *testing.T) {
	t.Cleanup(steps.Plug(steptypetest.Touch{}))
	src := `
version: 1
steps:
  - {label: poke, type: touch, path: touched.txt, timeout: 5s, continue_on_error: true}
  - {label: put, type: board, op: write, key: k, value: "${{ steps.poke.output }}"}
`
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	store := DirStore{Dir: t.TempDir()}
	Register(env, &Workflow{Store: store}, &Activities{Store: store})
	env.SetWorkerOptions(workerOptions)
	started := map[string]int{}
	env.SetOnLocalActivityStartedListener(func(i *activity.Info, _ context.Context, _ []any) {
		if i.ActivityType.Name == ActivityName {
			started["local"]++
		}
	})
	env.SetOnActivityStartedListener(func(i *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if i.ActivityType.Name == ActivityName {
			started["activity"]++
		}
	})
	wd := t.TempDir()
	env.ExecuteWorkflow(WorkflowName, Input{Run: newRun(t, src, wd), Options: Options{LocalStepsUnder: time.Minute}})
	var out Output
	if err := envOutput(env, &out); err != nil {
		t.Fatal(err)
	}
	b, err := LoadBoard(store, out.Head)
	if err != nil {
		t.Fatal(err)
	}
	if started["activity"] != 1 || started["local"] != 0 {
		t.Errorf("step activities started: %v, want the touch step's one normal activity", started)
	}
	if f, _ := os.ReadFile(filepath.Join(wd, "touched.txt")); string(f) != steptypetest.Line {
		t.Errorf("touched.txt is %q, want one line", f)
	}
	var got []string
	for _, r := range b.Steps() {
		got = append(got, r.Label+" "+r.Type+" "+r.Status)
	}
	if want := []string{"poke touch failed", "put board succeeded"}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("records %q, want %q", got, want)
	}
}

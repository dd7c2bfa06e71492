package temporal

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
)

// onHostPlan: quick steps that each need the files the steps before them
// wrote in the run's workspace, and one step with no timeout.
const onHostPlan = `
version: 1
name: onhost
steps:
  - {label: a, type: command, run: "echo a > f.txt", timeout: 5s}
  - {label: b, type: command, run: "echo b >> f.txt", timeout: 5s}
  - {label: open, type: command, run: "echo c >> f.txt"}
  - {label: c, type: command, run: "cat f.txt", timeout: 5s}
`

// A pinned run's quick steps run as local activities when the worker
// that runs the workflow task is the run's host (local.go), in the run's
// workspace there; when it is another worker, the step goes to the host's
// queue, and so do the run's later steps. Either way the run's records
// are those of the run in one process.
func TestPinnedRunQuickStepsOnTheHost(t *testing.T) {
	tests := []struct {
		name string
		// workflowHost is the host id of the worker that runs the
		// workflow's local activities ("" : the run's own host).
		workflowHost string
		under        time.Duration
		// the step activities: local ones that ran the step, local ones
		// that found their worker is not the host, and normal ones.
		local, elsewhere, remote int
	}{
		{"off by default", "", 0, 0, 0, 4},
		{"the workflow's worker is the host", "", time.Minute, 2, 0, 2}, // a pins the run; open has no timeout
		{"another worker runs the workflow", "h2", time.Minute, 0, 1, 4},
	}
	want, _ := inProcess(t, onHostPlan)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := DirStore{Dir: t.TempDir()}
			checkout := t.TempDir()
			plan := writePlan(t, checkout, onHostPlan)
			ws, err := PackWorkspace(store, plan, checkout)
			if err != nil {
				t.Fatal(err)
			}
			host := &Activities{Store: store, HostID: "h1", WorkRoot: t.TempDir()}
			other := &Activities{Store: store, HostID: tt.workflowHost, WorkRoot: t.TempDir()}
			local, elsewhere, remote := 0, 0, 0
			runStep := func(ctx context.Context, in StepInput) (*StepOutput, error) {
				a := host
				if activity.GetInfo(ctx).IsLocalActivity && tt.workflowHost != "" {
					a = other
				}
				out, err := a.RunStep(ctx, in)
				if activity.GetInfo(ctx).IsLocalActivity {
					if out != nil && out.Elsewhere {
						elsewhere++
					} else {
						local++
					}
				}
				return out, err
			}
			var s testsuite.WorkflowTestSuite
			s.SetLogger(quietLogger())
			env := s.NewTestWorkflowEnvironment()
			env.SetWorkerOptions(workerOptions)
			env.SetTestTimeout(time.Minute)
			Register(env, &Workflow{Store: store}, nil)
			env.RegisterActivityWithOptions(runStep, activity.RegisterOptions{Name: ActivityName})
			env.RegisterActivityWithOptions(host.Pin, activity.RegisterOptions{Name: PinName})
			env.RegisterActivityWithOptions(host.ReadWorkspace, activity.RegisterOptions{Name: WorkspaceReadName})
			env.SetOnActivityStartedListener(func(i *activity.Info, _ context.Context, _ converter.EncodedValues) {
				if i.ActivityType.Name == ActivityName {
					remote++
				}
			})
			run := newRun(t, onHostPlan, checkout)
			run.PlanPath = plan
			env.ExecuteWorkflow(WorkflowName, Input{Run: run, Workspace: ws, Options: Options{LocalStepsUnder: tt.under}})
			var out Output
			if err := envOutput(env, &out); err != nil {
				t.Fatal(err)
			}
			got, err := LoadBoard(store, out.Head)
			if err != nil {
				t.Fatal(err)
			}
			if local != tt.local || elsewhere != tt.elsewhere || remote != tt.remote {
				t.Errorf("%d local steps, %d local activities elsewhere, %d normal activities; want %d, %d, %d",
					local, elsewhere, remote, tt.local, tt.elsewhere, tt.remote)
			}
			if out.Status != "succeeded" {
				t.Fatalf("run %s: %s", out.Status, out.Error)
			}
			if d := sameCross(want, got); d != "" {
				t.Errorf("the boards differ from the in-process run: %s", d)
			}
			if s := stepOf(t, got, "c"); !strings.Contains(string(s.Result), `"a\nb\nc\n"`) {
				t.Errorf("c read %s; want every earlier step's line", s.Result)
			}
			for _, rec := range got.Steps() {
				if rec.Host != "h1" {
					t.Errorf("%s ran on %q; want the run's host h1", rec.Label, rec.Host)
				}
			}
		})
	}
}

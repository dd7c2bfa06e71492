package temporal

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
)

// Command steps whose timeout is at most --local-steps-under run as local
// activities (local.go); the others, and every step without the option,
// as normal activities. Either way the run's records and entries are
// those of the run in one process.
func TestWorkflowQuickStepsRunAsLocalActivities(t *testing.T) {
	src := `
version: 1
steps:
  - {label: quick, type: command, run: "echo quick", timeout: 5s}
  - {label: each, type: command, for_each: '[1, 2, 3]', run: "echo ${{ item }}", timeout: 10s}
  - {label: flaky, type: command, run: "exit 3", timeout: 5s, retry: {max: 1, backoff: 1s}, continue_on_error: true}
  - {label: slow, type: command, run: "echo slow", timeout: 2m}
  - {label: open, type: command, run: "echo ${{ steps.quick.stdout }}${{ join(steps.each.outputs, '') }}"}
  - {label: put, type: board, op: write, key: k, value: "${{ steps.open.stdout }}"}
`
	tests := []struct {
		name          string
		under         time.Duration
		local, remote int
	}{
		{"off by default", 0, 0, 8},
		{"steps with a timeout up to 1m", time.Minute, 6, 2},     // quick, 3 items, flaky twice; slow and open go to the queue
		{"steps with a timeout up to 5s", 5 * time.Second, 3, 5}, // quick and flaky's two attempts
	}
	want, _ := inProcess(t, src)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			s.SetLogger(quietLogger())
			env := s.NewTestWorkflowEnvironment()
			store := DirStore{Dir: t.TempDir()}
			Register(env, &Workflow{Store: store}, &Activities{Store: store})
			env.SetWorkerOptions(workerOptions)
			local, remote := 0, 0
			// Steps only: the store's reads and writes are local
			// activities of their own (storeact.go).
			env.SetOnLocalActivityStartedListener(func(i *activity.Info, _ context.Context, _ []any) {
				if i.ActivityType.Name == ActivityName {
					local++
				}
			})
			env.SetOnActivityStartedListener(func(i *activity.Info, _ context.Context, _ converter.EncodedValues) {
				if i.ActivityType.Name == ActivityName {
					remote++
				}
			})
			env.ExecuteWorkflow(WorkflowName, Input{Run: newRun(t, src, t.TempDir()), Options: Options{LocalStepsUnder: tt.under}})
			var out Output
			if err := envOutput(env, &out); err != nil {
				t.Fatal(err)
			}
			got, err := LoadBoard(store, out.Head)
			if err != nil {
				t.Fatal(err)
			}
			if local != tt.local || remote != tt.remote {
				t.Errorf("%d local and %d normal activities, want %d and %d", local, remote, tt.local, tt.remote)
			}
			if out.Status != want.Run().Status || out.Error != want.Run().Error {
				t.Errorf("run: in process %s %q, on Temporal %s %q", want.Run().Status, want.Run().Error, out.Status, out.Error)
			}
			if d := sameCross(want, got); d != "" {
				t.Errorf("the boards differ from the in-process run: %s", d)
			}
			if rec := lastRecord(got, "flaky"); rec.Attempts != 2 || rec.Status != "failed" {
				t.Errorf("flaky: %d attempts, %s", rec.Attempts, rec.Status)
			}
		})
	}
}

package temporal

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"
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

// A step handed to a worker whose workflow code is older than its run's
// fails at once, not retried, naming both versions, the run and the host;
// the same version, or an older run, is served.
func TestStepRefusedByOlderCode(t *testing.T) {
	src := "version: 1\nsteps:\n  - {label: a, type: command, run: \"echo a\"}\n"
	for _, tc := range []struct {
		name    string
		code    int
		refused bool
	}{
		{"a run of a newer build", WorkflowCodeVersion() + 1, true},
		{"a run of this build", WorkflowCodeVersion(), false},
		{"a run of an older build", WorkflowCodeVersion() - 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			s := DirStore{Dir: t.TempDir()}
			acts := &Activities{Store: s, Log: zerolog.Nop()}
			env.RegisterActivityWithOptions(acts.RunStep, activity.RegisterOptions{Name: ActivityName})
			s.Put([]byte(src))
			run := newRun(t, src, t.TempDir())
			head, err := putChunk(s, &chunk{Run: &run})
			if err != nil {
				t.Fatal(err)
			}
			v, err := env.ExecuteActivity(ActivityName, StepInput{PlanPath: "p.yaml", PlanSHA256: Sum([]byte(src)), Head: head,
				Label: "a", Visit: 1, Attempt: 1, Workdir: run.Workdir, Code: tc.code})
			if !tc.refused {
				var out StepOutput
				if err != nil || v.Get(&out) != nil || out.Error != "" {
					t.Fatalf("got %v (%s); want the step run", err, out.Error)
				}
				return
			}
			var app *temporal.ApplicationError
			if !errors.As(err, &app) || app.Type() != errCodeTooOld || !app.NonRetryable() {
				t.Fatalf("got %v; want a non-retryable %s", err, errCodeTooOld)
			}
			for _, want := range []string{"has workflow code version " + strconv.Itoa(WorkflowCodeVersion()),
				"needs version " + strconv.Itoa(tc.code), "step a", hostname()} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%v: does not say %q", err, want)
				}
			}
		})
	}
}

// A pinned run whose host's worker refuses its steps as too old (an
// upgrade under way) moves to another host, from its last snapshot, and
// the pin says why; the run succeeds there.
func TestPinnedRunLeavesOlderHost(t *testing.T) {
	store := DirStore{Dir: t.TempDir()}
	checkout := t.TempDir()
	plan := writePlan(t, checkout, onHostPlan)
	ws, err := PackWorkspace(store, plan, checkout)
	if err != nil {
		t.Fatal(err)
	}
	h := &hostPair{hosts: []*Activities{
		{Store: store, HostID: "old", WorkRoot: t.TempDir()},
		{Store: store, HostID: "new", WorkRoot: t.TempDir()},
	}}
	refused := 0
	runStep := func(ctx context.Context, in StepInput) (*StepOutput, error) {
		if a := h.host(); a.HostID == "old" && in.Label == "b" {
			// What an older build says (its code is older than in.Code).
			refused++
			err := codeTooOld(in.Code+1, "wf", in.Label)
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), errCodeTooOld, nil)
		}
		return h.host().RunStep(ctx, in)
	}
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(workerOptions)
	env.SetTestTimeout(time.Minute)
	Register(env, &Workflow{Store: store}, nil)
	env.RegisterActivityWithOptions(runStep, activity.RegisterOptions{Name: ActivityName})
	env.RegisterActivityWithOptions(h.pin, activity.RegisterOptions{Name: PinName})
	env.RegisterActivityWithOptions(h.read, activity.RegisterOptions{Name: WorkspaceReadName})
	run := newRun(t, onHostPlan, checkout)
	run.PlanPath = plan
	env.ExecuteWorkflow(WorkflowName, Input{Run: run, Workspace: ws})
	var out Output
	if err := envOutput(env, &out); err != nil {
		t.Fatal(err)
	}
	b, err := LoadBoard(store, out.Head)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "succeeded" {
		t.Fatalf("run %s: %s", out.Status, out.Error)
	}
	if refused != 1 || len(out.Hosts) != 2 || out.Hosts[1].Host != "new" || !strings.Contains(out.Hosts[1].Reason, "host old runs an older workflow code") {
		t.Fatalf("%d steps refused, hosts %+v; want one, then a pin to new that says why", refused, out.Hosts)
	}
	if got := stepOf(t, b, "c"); !strings.Contains(string(got.Result), `"a\nb\nc\n"`) || got.Host != "new" {
		t.Errorf("c on %s read %s; want every earlier step's line, on new", got.Host, got.Result)
	}
	if a := stepOf(t, b, "a"); a.Host != "old" {
		t.Errorf("a ran on %s, want old (before the refusal)", a.Host)
	}
}

// A step of the shared queue that a worker older than the run refused is
// sent again, for a newer worker to take: the run succeeds once one does.
func TestSharedStepWaitsForNewerWorker(t *testing.T) {
	store := DirStore{Dir: t.TempDir()}
	acts := &Activities{Store: store}
	refused := 0
	runStep := func(ctx context.Context, in StepInput) (*StepOutput, error) {
		if in.Label == "b" && refused < 2 {
			refused++
			err := codeTooOld(in.Code+1, "wf", in.Label)
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), errCodeTooOld, nil)
		}
		return acts.RunStep(ctx, in)
	}
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(workerOptions)
	env.SetTestTimeout(time.Minute)
	Register(env, &Workflow{Store: store}, nil)
	env.RegisterActivityWithOptions(runStep, activity.RegisterOptions{Name: ActivityName})
	wd := t.TempDir()
	env.ExecuteWorkflow(WorkflowName, Input{Run: newRun(t, onHostPlan, wd)})
	var out Output
	if err := envOutput(env, &out); err != nil {
		t.Fatal(err)
	}
	b, err := LoadBoard(store, out.Head)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "succeeded" || refused != 2 {
		t.Fatalf("run %s (%s) after %d refusals; want succeeded after 2", out.Status, out.Error, refused)
	}
	if got := stepOf(t, b, "c"); !strings.Contains(string(got.Result), `"a\nb\nc\n"`) {
		t.Errorf("c read %s; want every earlier step's line", got.Result)
	}
}

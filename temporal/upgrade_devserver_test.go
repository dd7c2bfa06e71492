package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/runs"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// buildAt builds runner-temporal from this tree with its workflow code
// version set to code. An older release is simulated so, not built from
// an older commit: a checkout and a cold build of an old tree take
// minutes on a CI machine, and what a worker does with a run depends on
// nothing but that version.
var buildAt = struct {
	sync.Mutex
	bins map[int]string
}{bins: map[int]string{}}

func buildWorkflowCode(t *testing.T, code int) string {
	t.Helper()
	buildAt.Lock()
	defer buildAt.Unlock()
	if bin := buildAt.bins[code]; bin != "" {
		return bin
	}
	dir, err := os.MkdirTemp("", "runner-temporal-code-")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "runner-temporal")
	cmd := exec.Command("go", "build", "-o", bin, "-ldflags", fmt.Sprintf("-X github.com/planrunner/runner/temporal.workflowCode=%d", code), "./cmd/runner-temporal")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("go build (workflow code %d): %v\n%s", code, err, out)
	}
	buildAt.bins[code] = bin
	t.Cleanup(func() { // the binary goes with the test that built it, and so does its place in the cache
		buildAt.Lock()
		delete(buildAt.bins, code)
		buildAt.Unlock()
		os.RemoveAll(dir)
	})
	return bin
}

// upgradeCluster is a dev server and a store; each process says which
// build, task queue and store it uses.
type upgradeCluster struct {
	srv  *devServer
	work string
	tc   client.Client
}

func newUpgradeCluster(t *testing.T) *upgradeCluster {
	if testing.Short() {
		t.Skip("starts a Temporal dev server and builds binaries")
	}
	srv := startDevServer(t)
	tc, err := client.Dial(client.Options{HostPort: srv.hostPort, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	return &upgradeCluster{srv: srv, work: t.TempDir(), tc: tc}
}

func (u *upgradeCluster) worker(t *testing.T, bin, queue, blobs string) *proc {
	return startProc(t, u.work, bin, "worker", "--temporal", u.srv.hostPort, "--task-queue", queue, "--blobs", blobs,
		"--work-root", t.TempDir(), "--shared-workspace")
}

func (u *upgradeCluster) run(t *testing.T, bin, queue, blobs, plan, out string, extra ...string) *proc {
	args := append([]string{"run", plan, "--temporal", u.srv.hostPort, "--task-queue", queue, "--blobs", blobs,
		"--out", out, "--events", "--shared-workspace"}, extra...)
	return startProc(t, u.work, bin, args...)
}

// identities are the identities of the workers that completed the
// workflow's tasks, in order, and whether any task failed.
func (u *upgradeCluster) identities(t *testing.T, wfID string) (completed []string, failed int) {
	t.Helper()
	it := u.tc.GetWorkflowHistory(context.Background(), wfID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			completed = append(completed, e.GetWorkflowTaskCompletedEventAttributes().GetIdentity())
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
			failed++
		}
	}
	return completed, failed
}

func (u *upgradeCluster) status(t *testing.T, wfID string) enumspb.WorkflowExecutionStatus {
	t.Helper()
	d, err := u.tc.DescribeWorkflowExecution(context.Background(), wfID, "")
	if err != nil {
		t.Fatal(err)
	}
	return d.GetWorkflowExecutionInfo().GetStatus()
}

// A task queue's store is recorded by the first worker or client of the
// queue; a later one with another store is refused at start, naming both
// stores and ids, whichever came first, and with no run open.
func TestDevServerQueueStoreRefused(t *testing.T) {
	u := newUpgradeCluster(t)
	bin := buildWorkflowCode(t, WorkflowCodeVersion())
	good, typo := filepath.Join(u.work, "store"), filepath.Join(u.work, "stroe")
	goodID := must(DirStore{Dir: good}.ID())
	typoID := must(DirStore{Dir: typo}.ID())
	plan := writePlan(t, u.work, "version: 1\nname: hello\nsteps:\n  - {label: a, type: command, run: \"echo a\"}\n")
	refused := func(p *proc, who string) {
		t.Helper()
		code := p.wait(t, time.Minute)
		msg := p.out.String()
		for _, want := range []string{"runs use store " + good + " (id " + goodID + ")", "this " + who, "has " + typo + " (id " + typoID + ")"} {
			if code == 0 || !strings.Contains(msg, want) {
				t.Errorf("%s with another store: exit %d, want a refusal saying %q:\n%s", who, code, want, msg)
			}
		}
	}

	// A worker first: a client with another store is refused, one with
	// the worker's runs its plan.
	w := u.worker(t, bin, "first-worker", good)
	waitOutput(t, w, "worker started", time.Minute)
	refused(u.run(t, bin, "first-worker", typo, plan, filepath.Join(u.work, "r1.json")), "client")
	if p := u.run(t, bin, "first-worker", good, plan, filepath.Join(u.work, "r2.json")); p.wait(t, time.Minute) != 0 {
		t.Errorf("a client with the worker's store:\n%s", p.out)
	}

	// A client first (its run waits for a worker): a worker with another
	// store is refused, one with the client's takes the run.
	r := u.run(t, bin, "first-client", good, plan, filepath.Join(u.work, "r3.json"))
	waitOutput(t, r, `"begin"`, time.Minute)
	refused(u.worker(t, bin, "first-client", typo), "worker")
	u.worker(t, bin, "first-client", good)
	if code := r.wait(t, time.Minute); code != 0 {
		t.Errorf("the run, once a worker with its store came:\n%s", r.out)
	}
}

// An upgrade, with workers of workflow code version 1 (the release in
// use) and 2 (the new one): a run started by a new client is left by the
// old worker (its workflow tasks wait, nothing fails) and finishes on the
// new worker once it starts; a run started by an old client and in the
// middle of a step when the upgrade begins finishes on the new worker
// after the old one stops.
func TestDevServerUpgradeKeepsRunsSafe(t *testing.T) {
	u := newUpgradeCluster(t)
	oldBin, newBin := buildWorkflowCode(t, 1), buildWorkflowCode(t, 2)
	blobs := filepath.Join(u.work, "store")
	const queue = "upgrade"

	old := u.worker(t, oldBin, queue, blobs)
	waitOutput(t, old, "worker started", time.Minute)

	// In flight: an old client's run, on the old worker, waits inside a
	// step for a file the test writes once the old worker is gone.
	inflight := writePlan(t, t.TempDir(), "version: 1\nname: inflight\nsteps:\n"+
		"  - {label: before, type: command, run: \"echo before\"}\n"+
		"  - {label: hold, type: command, run: \"touch "+filepath.Join(u.work, "holding")+"; while [ ! -f "+filepath.Join(u.work, "go-on")+" ]; do sleep 0.2; done; echo held\"}\n"+
		"  - {label: after, type: command, run: \"echo after\"}\n")
	r1 := u.run(t, oldBin, queue, blobs, inflight, filepath.Join(u.work, "inflight.json"), "--heartbeat-timeout", "3s")
	waitOutput(t, r1, `"label":"hold"`, time.Minute)

	// A new client's run: the old worker takes its first workflow task
	// and leaves it, saying why; the run stays open.
	newer := writePlan(t, t.TempDir(), "version: 1\nname: newer\nsteps:\n  - {label: a, type: command, run: \"echo a\"}\n")
	r2 := u.run(t, newBin, queue, blobs, newer, filepath.Join(u.work, "newer.json"))
	waitOutput(t, old, "workflow code version 1; the run needs version 2", time.Minute)
	wf2 := WorkflowID("newer", beginOf(t, r2).RunID)
	if st := u.status(t, wf2); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("the new run on the old worker alone: %s, want running", st)
	}

	// The upgrade: start the new worker, stop the old one.
	u.worker(t, newBin, queue, blobs)
	if code := r2.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("the new run, once a new worker came: exit %d\n%s", code, r2.out)
	}
	done, _ := u.identities(t, wf2)
	for _, id := range done {
		if !strings.Contains(id, "workflow code 2") {
			t.Errorf("a workflow task of the new run was completed by %q", id)
		}
	}
	old.cmd.Process.Signal(os.Interrupt)
	old.wait(t, time.Minute)
	if err := os.WriteFile(filepath.Join(u.work, "go-on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := r1.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("the run in flight during the upgrade: exit %d\n%s", code, r1.out)
	}
	wf1 := WorkflowID("inflight", beginOf(t, r1).RunID)
	done, failed := u.identities(t, wf1)
	if len(done) == 0 || !strings.Contains(done[0], "workflow code 1") || !strings.Contains(done[len(done)-1], "workflow code 2") || failed != 0 {
		t.Errorf("the run in flight: tasks completed by %q (%d failed); want the old build first, the new one last, none failed", done, failed)
	}

	// An old client's run taken by the new worker: its history holds
	// version 2. Neither it nor the new client's run is served by version
	// 1 code: a replay on an old worker panics with our reason (its task
	// would be handed to another worker), and replays on a new one.
	r3 := u.run(t, oldBin, queue, blobs, newer, filepath.Join(u.work, "old-client.json"))
	if code := r3.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("an old client's run on the new worker: exit %d\n%s", code, r3.out)
	}
	wf3 := WorkflowID("newer", beginOf(t, r3).RunID)
	current := codeVersion
	defer func() { codeVersion = current }()
	for _, c := range []struct {
		wf   string
		code int
		want string
	}{{wf2, 1, "the run needs version 2"}, {wf3, 1, "the run needs version 2"}, {wf2, 2, ""}, {wf3, 2, ""}} {
		codeVersion = c.code
		rep := newReplayer(t)
		Register(rep, &Workflow{Store: DirStore{Dir: blobs}}, nil)
		err := rep.ReplayWorkflowHistory(quietLogger(), u.history(t, c.wf))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("replaying %s with workflow code %d: %v, want %q", c.wf, c.code, err, c.want)
		}
	}
}

func (u *upgradeCluster) history(t *testing.T, wfID string) *historypb.History {
	t.Helper()
	resp, err := u.tc.WorkflowService().GetWorkflowExecutionHistory(context.Background(), &workflowservice.GetWorkflowExecutionHistoryRequest{
		Namespace: "default", Execution: &commonpb.WorkflowExecution{WorkflowId: wfID}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetHistory()
}

// beginOf reads the `begin` event of a `run --events` output.
func beginOf(t *testing.T, p *proc) runs.EventBegin {
	t.Helper()
	for line := range strings.SplitSeq(p.out.String(), "\n") {
		var e runs.Event
		if json.Unmarshal([]byte(line), &e) == nil && e.Begin != nil {
			return *e.Begin
		}
	}
	t.Fatalf("no begin event in:\n%s", p.out)
	return runs.EventBegin{}
}

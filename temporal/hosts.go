package temporal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/sys/boot"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Where steps run. A run whose workspace travels with it (Input.Workspace)
// is pinned to one host: its first step that touches the world asks the
// shared task queue for a host (PinName, answered by whichever worker
// polls first, which makes the workspace there), and every later activity
// of the run goes to that host's own task queue, HostQueue(queue, host),
// which each worker polls beside the shared one. A host that stops taking
// its tasks (its worker died: the step's heartbeat times out, and the
// retry waits on the host's queue past Options.HostTimeout) loses the
// run: the workflow pins it again, to whichever host answers, which makes
// the workspace from the last snapshot a step left.
//
// Temporal's worker sessions would do the pinning too, but a session is
// bound to one worker process (a restarted worker on the same disk starts
// none of the sessions it had), needs a session activity per run kept
// open with its own heartbeats, and its failure is a session error the
// workflow must handle around every activity anyway; a queue per host is
// plain activities, survives a worker restart with the same --host-id,
// and shows in Temporal's UI as a task queue per host.

// Activity names of the pinning.
const (
	PinName           = "runner.pin"
	WorkspaceReadName = "runner.workspace"
)

// HostQueue is the task queue of one host's worker.
func HostQueue(queue, host string) string { return queue + "@" + host }

// NewHostID names a worker's host when no --host-id is given: the
// machine's name and a random suffix, so two workers of one machine with
// separate disks (containers, mount namespaces) are two hosts.
func NewHostID() string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "host"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return name + "-" + hex.EncodeToString(b[:])
}

// DefaultWorkRoot is where a worker makes its runs' workspaces when no
// --work-root is given.
func DefaultWorkRoot() string { return boot.DefaultWorkRoot() }

// PinInput asks a worker to take a run: make its workspace there.
type PinInput struct {
	Workspace string // the manifest to make it from
}

// PinOutput is the host that took it; Shared: the worker that answered
// sees the run's workdir as the client does (--shared-workspace), so the
// run is not pinned and its steps run on any worker, in that workdir.
type PinOutput struct {
	Host   string
	Shared bool `json:",omitempty"`
}

// WorkspaceRead is a files() or read_file() of a pinned run, done on its
// host.
type WorkspaceRead struct {
	Workspace string
	Call      engine.WorkspaceCall
}

// NewHostWorker makes the worker of this host's own task queue: the step
// activities of the runs pinned here.
func NewHostWorker(c client.Client, queue string, acts *Activities, opt worker.Options) worker.Worker {
	w := worker.New(c, HostQueue(queue, acts.HostID), opt)
	if acts.health == nil {
		acts.health = healthCheck(c)
	}
	registerActivities(w, acts)
	return w
}

func registerActivities(r worker.ActivityRegistry, acts *Activities) {
	r.RegisterActivityWithOptions(acts.RunStep, activity.RegisterOptions{Name: ActivityName})
	r.RegisterActivityWithOptions(acts.Pin, activity.RegisterOptions{Name: PinName})
	r.RegisterActivityWithOptions(acts.ReadWorkspace, activity.RegisterOptions{Name: WorkspaceReadName})
}

// Pin takes a run on this host: its workspace is made here.
func (a *Activities) Pin(ctx context.Context, in PinInput) (*PinOutput, error) {
	if a.SharedWorkspace {
		return &PinOutput{Shared: true}, nil
	}
	if a.HostID == "" {
		return nil, temporal.NewNonRetryableApplicationError("this worker has no host id: it cannot take runs whose workspace travels with them", errBadInput, nil)
	}
	stop := beatWhile(ctx)
	_, _, err := a.workspace(activity.GetInfo(ctx).WorkflowExecution.ID, in.Workspace)
	stop()
	if err != nil {
		return nil, err
	}
	return &PinOutput{Host: a.HostID}, nil
}

// ReadWorkspace answers a files() or read_file() of a run pinned here.
func (a *Activities) ReadWorkspace(ctx context.Context, in WorkspaceRead) (json.RawMessage, error) {
	// A worker restarted with an empty memory reads the manifest again
	// (or makes the workspace), and a big tree takes long to list.
	defer beatWhile(ctx)()
	root, m, err := a.workspace(activity.GetInfo(ctx).WorkflowExecution.ID, in.Workspace)
	if err != nil {
		return nil, err
	}
	wd := filepath.Join(root, filepath.FromSlash(m.Workdir))
	var ans engine.WorkspaceAnswer
	if in.Call.Func == "files" {
		ans.Value, err = engine.Files(wd, in.Call.Arg)
	} else {
		ans.Value, err = engine.ReadFile(wd, in.Call.Arg)
	}
	if err != nil {
		ans = engine.WorkspaceAnswer{Error: err.Error()}
	}
	return json.Marshal(ans)
}

// hostState is what a worker keeps of a run pinned to it.
type hostState struct {
	mu    sync.Mutex
	root  string
	m     *Manifest
	cache hashCache
}

// workspace is the run's workspace on this host: made from the manifest
// name the first time (or after the worker restarted, taken as it was
// left on disk). A manifest not in the store, or a workspace that cannot
// be made, is a non-retryable error naming this host and the path.
func (a *Activities) workspace(runID, name string) (string, *Manifest, error) {
	a.wsMu.Lock()
	defer a.wsMu.Unlock()
	if st := a.hosted[runID]; st != nil {
		return st.root, st.m, nil
	}
	workRoot := a.WorkRoot
	if workRoot == "" {
		workRoot = DefaultWorkRoot()
	}
	root := filepath.Join(workRoot, safeName(runID))
	fail := func(err error) (string, *Manifest, error) {
		err = fmt.Errorf("host %s: the run's workspace %s: %w", a.HostID, root, err)
		return "", nil, temporal.NewNonRetryableApplicationError(err.Error(), errBadInput, err)
	}
	m, err := LoadManifest(a.Store, name)
	if err != nil {
		return fail(err)
	}
	if _, err := os.Stat(root); errors.Is(err, os.ErrNotExist) {
		if err := materialize(a.Store, m, root); err != nil {
			return fail(err)
		}
	} else if err != nil {
		return fail(err)
	}
	plan := filepath.Join(root, filepath.FromSlash(m.PlanDir), m.Plan)
	if _, err := os.Stat(plan); err != nil {
		return fail(fmt.Errorf("the plan file %s is missing: %w", plan, err))
	}
	if a.hosted == nil {
		a.hosted = map[string]*hostState{}
	}
	if len(a.hosted) >= maxRuns {
		for k := range a.hosted { // forget any one: its workspace is on disk, found again
			delete(a.hosted, k)
			break
		}
	}
	a.hosted[runID] = &hostState{root: root, m: m, cache: hashCache{}}
	return root, m, nil
}

// snapshot puts the run's workspace on this host back in the store after
// a step, so that another host can take the run over with it.
// runID is the workflow's, id the run's own (its .runner/runs/<id>/).
func (a *Activities) snapshot(runID, id string) (string, error) {
	a.wsMu.Lock()
	st := a.hosted[runID]
	a.wsMu.Unlock()
	if st == nil {
		return "", nil
	}
	// One snapshot of a run at a time: parallel steps share its cache.
	st.mu.Lock()
	defer st.mu.Unlock()
	return snapshot(a.Store, st.m, st.root, id, st.cache)
}

// safeName makes a workflow id a directory name.
func safeName(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '_'
		}
		return r
	}, id)
}

// pinnedHosts versions the pinning of a run to a host: runs started
// without a workspace (all runs before it) never pin.
const pinnedHosts = "pinned-hosts"

// Pin is one host a run was pinned to, and why (the record of where its
// steps ran; a re-pin names the host it left).
type Pin struct {
	Host   string
	Reason string `json:",omitempty"`
	At     time.Time
}

// pinned reports whether this run's steps stay on one host.
func (it *interp) pinned(ctx workflow.Context) bool {
	return it.in.Workspace != "" && workflow.GetVersion(ctx, pinnedHosts, workflow.DefaultVersion, 1) >= 1
}

// pin finds a host for the run (whichever worker of the shared queue
// answers first), which makes the workspace from the latest snapshot.
func (it *interp) pin(ctx workflow.Context, reason string) error {
	// Two coroutines (a parallel group's children) may want a host at
	// once: one asks, the others wait for its answer.
	if it.pinning {
		return workflow.Await(ctx, func() bool { return !it.pinning })
	}
	it.pinning = true
	defer func() { it.pinning = false }()
	// Making the workspace may take minutes (StartToClose), but a worker
	// that dies or is cut off while it does must not hold the run that
	// long: Pin heartbeats, and a silent worker's pin is tried again on
	// another (runs sat 10 minutes at pin#1 when a worker died holding it).
	ao := workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    it.opt.HeartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: 30 * time.Second, MaximumAttempts: 20, NonRetryableErrorTypes: []string{errBadInput}},
		ActivityID: fmt.Sprintf("pin#%d", len(it.hosts)+1),
		Summary:    "pin the run to a host: " + reason,
	}
	var out PinOutput
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, ao), PinName, PinInput{Workspace: it.ws}).Get(ctx, &out); err != nil {
		return err
	}
	if out.Shared {
		it.shared = true
		it.hosts = append(it.hosts, Pin{Host: "shared", Reason: "the worker shares the workspace (--shared-workspace)", At: workflow.Now(ctx).UTC()})
		return nil
	}
	it.host = out.Host
	it.hosts = append(it.hosts, Pin{Host: out.Host, Reason: reason, At: workflow.Now(ctx).UTC()})
	workflow.GetLogger(ctx).Info("run pinned", "host", out.Host, "reason", reason)
	return nil
}

// ensurePinned pins the run to a host unless it has one (or a worker
// said the workspace is shared).
func (it *interp) ensurePinned(ctx workflow.Context) error {
	for it.host == "" && !it.shared {
		reason := "first step"
		if len(it.hosts) > 0 {
			reason = "host " + it.hosts[len(it.hosts)-1].Host + " stopped taking the run's tasks"
		}
		if err := it.pin(ctx, reason); err != nil {
			return err
		}
	}
	return nil
}

// onHost runs an activity on the run's host, pinning it first, and
// re-pinning it when the host stopped taking its tasks. arg makes the
// activity's input: for the host, or (shared) for any worker.
//
// lost, if not nil, counts the attempts lost with a host: an activity
// whose retry waited past the host timeout, having heartbeated (it ran).
// The re-pinned activity starts again at Temporal's attempt 1, so the
// step's record adds them (a step lost before its first heartbeat, about
// a second in, is not counted).
func (it *interp) onHost(ctx workflow.Context, ao workflow.ActivityOptions, name string, arg func(shared bool) any, out any, lost *int) error {
	for {
		if err := it.ensurePinned(ctx); err != nil {
			return err
		}
		if it.shared {
			return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, ao), name, arg(true)).Get(ctx, out)
		}
		host := it.host
		o := ao
		o.TaskQueue = HostQueue(workflow.GetInfo(ctx).TaskQueueName, host)
		o.ScheduleToStartTimeout = it.opt.HostTimeout
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, o), name, arg(false)).Get(ctx, out)
		var te *temporal.TimeoutError
		if err != nil && errors.As(err, &te) && te.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START && ctx.Err() == nil {
			if it.host == host {
				it.host = "" // lost: the next turn pins the run again
			}
			if lost != nil && te.HasLastHeartbeatDetails() {
				*lost++
			}
			continue
		}
		return err
	}
}

// readOptions are a files() or read_file() on the run's host (with the
// run's heartbeat timeout: ReadWorkspace heartbeats).
var readOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 5 * time.Minute,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
		MaximumInterval: 30 * time.Second, MaximumAttempts: 20, NonRetryableErrorTypes: []string{errBadInput}},
}

// beatWhile heartbeats an activity until the returned func is called, as
// often as its heartbeat timeout needs (none: it does nothing).
func beatWhile(ctx context.Context) (stop func()) {
	ht := activity.GetInfo(ctx).HeartbeatTimeout
	if ht <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(ht / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

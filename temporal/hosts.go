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

// A run's workspace on a host is a copy, named when a pin makes it (a
// pin landing on the host whose copy the run already goes on with keeps
// it). The host numbers the snapshots it puts in the store after each
// step of the copy, in the order it takes them (one at a time, each of
// the whole workspace, after the step's files were written): the highest
// number holds the effects of every step of the copy that finished before
// it, in whatever order their completions reach the workflow. So the
// workflow keeps the highest-numbered snapshot of the copy the run is on
// (not the last it heard of), hands it to a pin that moves the run, and
// runs again a step whose completion comes from a copy the run has left
// (its files are not in the one it goes on with).

// PinInput asks a worker to take a run: make its workspace there.
type PinInput struct {
	Workspace string // the manifest to make it from
	// Copy is the copy the run is on ("" before its first pin): the host
	// that holds it keeps it, any other makes a new one from Workspace.
	Copy string `json:",omitempty"`
	// Code is the workflow code version the run needs: an older worker
	// does not take the run (the pin is tried again, elsewhere).
	Code int `json:",omitempty"`
}

// PinOutput is the host that took it; Shared: the worker that answered
// sees the run's workdir as the client does (--shared-workspace), so the
// run is not pinned and its steps run on any worker, in that workdir.
// Copy names the copy the run goes on with there; Kept: it is the one the
// run was on (the host already held it), so the snapshots keep numbering.
type PinOutput struct {
	Host   string
	Shared bool   `json:",omitempty"`
	Copy   string `json:",omitempty"`
	Kept   bool   `json:",omitempty"`
}

// WorkspaceRead is a files() or read_file() of a pinned run, done on its
// host.
type WorkspaceRead struct {
	Workspace string
	Copy      string `json:",omitempty"`
	Seq       int64  `json:",omitempty"`
	Call      engine.WorkspaceCall
}

// wsWant is the copy of a run's workspace an activity expects on its
// host: Copy ("" from a workflow that names none: whatever the host has),
// and the newest snapshot of it the workflow knows (Manifest, numbered
// Seq), which a host without it makes it from.
type wsWant struct {
	Manifest string
	Copy     string
	Seq      int64
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
	r.RegisterActivityWithOptions(acts.SpreadStep, activity.RegisterOptions{Name: SpreadName})
}

// Pin takes a run on this host: its workspace is made here.
func (a *Activities) Pin(ctx context.Context, in PinInput) (*PinOutput, error) {
	if in.Code > codeVersion {
		err := codeTooOld(in.Code, activity.GetInfo(ctx).WorkflowExecution.ID, "pin")
		a.Log.Error().Int("run_code", in.Code).Int("code", codeVersion).Msg(err.Error())
		return nil, temporal.NewApplicationError(err.Error(), errCodeTooOld)
	}
	if a.SharedWorkspace {
		return &PinOutput{Shared: true}, nil
	}
	if a.HostID == "" {
		return nil, temporal.NewNonRetryableApplicationError("this worker has no host id: it cannot take runs whose workspace travels with them", errBadInput, nil)
	}
	stop := beatWhile(ctx)
	st, kept, err := a.hostCopy(activity.GetInfo(ctx).WorkflowExecution.ID, wsWant{Manifest: in.Workspace, Copy: in.Copy}, true)
	stop()
	if err != nil {
		return nil, err
	}
	return &PinOutput{Host: a.HostID, Copy: st.copy, Kept: kept}, nil
}

// ReadWorkspace answers a files() or read_file() of a run pinned here.
func (a *Activities) ReadWorkspace(ctx context.Context, in WorkspaceRead) (json.RawMessage, error) {
	// A worker restarted with an empty memory reads the manifest again
	// (or makes the workspace), and a big tree takes long to list.
	defer beatWhile(ctx)()
	st, _, err := a.hostCopy(activity.GetInfo(ctx).WorkflowExecution.ID, wsWant{Manifest: in.Workspace, Copy: in.Copy, Seq: in.Seq}, false)
	if err != nil {
		return nil, err
	}
	wd := filepath.Join(st.root, filepath.FromSlash(st.m.Workdir))
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

// hostState is what a worker keeps of a run pinned to it: where its copy
// is, the layout, the copy's name and its last snapshot's number (both
// also on disk, copyFile, for a restarted worker).
type hostState struct {
	mu    sync.Mutex
	root  string
	m     *Manifest
	cache hashCache
	copy  string
	seq   int64
	gone  bool // set aside for another copy: no more snapshots
}

// copyFile, in a run's root on a host (beside the workdir, never in a
// snapshot), names the copy there and its last snapshot's number.
const copyFile = ".copy.json"

type copyMeta struct {
	Copy string
	Seq  int64
}

func readCopyMeta(root string) copyMeta {
	var cm copyMeta
	if data, err := os.ReadFile(filepath.Join(root, copyFile)); err == nil {
		_ = json.Unmarshal(data, &cm) // unreadable: no name, so made again
	}
	return cm
}

// writeCopyMeta replaces the file whole: a worker killed meanwhile leaves
// the old one or the new.
func writeCopyMeta(root string, cm copyMeta) error {
	data, err := json.Marshal(cm)
	if err != nil {
		return err
	}
	tmp := filepath.Join(root, copyFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(root, copyFile))
}

func newCopyName(host string) string { return host + "-" + randHex() }

func randHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// workspace is the run's workspace on this host, made from the manifest
// name if the host has none (see hostCopy).
func (a *Activities) workspace(runID, name string) (string, *Manifest, error) {
	st, _, err := a.hostCopy(runID, wsWant{Manifest: name}, false)
	if err != nil {
		return "", nil, err
	}
	return st.root, st.m, nil
}

// hostCopy is the run's copy of its workspace on this host: the one it
// has (in memory, or on disk after the worker restarted) when it is the
// copy w names, else made from w.Manifest, the newest snapshot the
// workflow knows: a copy of another lineage (the run went to another
// host and came back) misses what the steps there did. A pin makes a
// copy under a new name; a step on a host whose copy is gone (its disk
// was replaced) makes it under the name it expects, numbered on from
// w.Seq. kept: the copy w names was here. A manifest not in the store,
// or a workspace that cannot be made, is a non-retryable error naming
// this host and the path.
func (a *Activities) hostCopy(runID string, w wsWant, pin bool) (st *hostState, kept bool, err error) {
	a.wsMu.Lock()
	defer a.wsMu.Unlock()
	workRoot := a.WorkRoot
	if workRoot == "" {
		workRoot = DefaultWorkRoot()
	}
	root := filepath.Join(workRoot, safeName(runID))
	fail := func(err error) (*hostState, bool, error) {
		err = fmt.Errorf("host %s: the run's workspace %s: %w", a.HostID, root, err)
		return nil, false, temporal.NewNonRetryableApplicationError(err.Error(), errBadInput, err)
	}
	st = a.hosted[runID]
	if st == nil {
		if _, err := os.Stat(root); err == nil {
			m, err := LoadManifest(a.Store, w.Manifest)
			if err != nil {
				return fail(err)
			}
			cm := readCopyMeta(root)
			st = &hostState{root: root, m: m, cache: hashCache{}, copy: cm.Copy, seq: cm.Seq}
		} else if !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
	}
	switch {
	case st != nil && (w.Copy == "" || st.copy == w.Copy):
		// The copy asked for (or, from a workflow that names none,
		// whichever this host has, as it was left).
		kept = w.Copy != ""
		if st.copy == "" {
			// A copy from a worker that named none: named now.
			st.copy = newCopyName(a.HostID)
			if err := writeCopyMeta(root, copyMeta{Copy: st.copy, Seq: st.seq}); err != nil {
				return fail(err)
			}
		}
	default:
		if st != nil {
			// Another lineage's copy: set aside whole (a step of it
			// still running here writes nowhere the new copy is), then gone.
			// A snapshot of it under way ends first; later ones are not taken.
			st.mu.Lock()
			st.gone = true
			st.mu.Unlock()
			old := root + ".old-" + randHex()
			if err := os.Rename(root, old); err != nil {
				return fail(err)
			}
			go os.RemoveAll(old)
		}
		m, err := LoadManifest(a.Store, w.Manifest)
		if err != nil {
			return fail(err)
		}
		if err := materialize(a.Store, m, root); err != nil {
			return fail(err)
		}
		cm := copyMeta{Copy: w.Copy, Seq: w.Seq}
		if pin || cm.Copy == "" {
			cm = copyMeta{Copy: newCopyName(a.HostID)}
		}
		if err := writeCopyMeta(root, cm); err != nil {
			return fail(err)
		}
		st = &hostState{root: root, m: m, cache: hashCache{}, copy: cm.Copy, seq: cm.Seq}
	}
	plan := filepath.Join(root, filepath.FromSlash(st.m.PlanDir), st.m.Plan)
	if _, err := os.Stat(plan); err != nil {
		return fail(fmt.Errorf("the plan file %s is missing: %w", plan, err))
	}
	if a.hosted == nil {
		a.hosted = map[string]*hostState{}
	}
	if a.hosted[runID] == nil && len(a.hosted) >= maxRuns {
		for k := range a.hosted { // forget any one: its workspace is on disk, found again
			delete(a.hosted, k)
			break
		}
	}
	a.hosted[runID] = st
	return st, kept, nil
}

// snapshot puts the run's workspace on this host back in the store after
// a step, so that another host can take the run over with it, and returns
// it with its copy's name and its number there.
// runID is the workflow's, id the run's own (its .runner/runs/<id>/).
func (a *Activities) snapshot(runID, id string) (name, copyName string, seq int64, err error) {
	a.wsMu.Lock()
	st := a.hosted[runID]
	a.wsMu.Unlock()
	if st == nil {
		return "", "", 0, nil
	}
	// One snapshot of a run at a time: parallel steps share its cache,
	// and the numbers follow the order the snapshots were taken in.
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.gone {
		// The run's copy here was made again meanwhile: this step's
		// effects are in none the run goes on with (it runs again).
		return "", st.copy, 0, nil
	}
	if name, err = snapshot(a.Store, st.m, st.root, id, st.cache); err != nil {
		return "", "", 0, err
	}
	// Numbered on disk before any completion names it: a restarted
	// worker numbers on past it.
	if err := writeCopyMeta(st.root, copyMeta{Copy: st.copy, Seq: st.seq + 1}); err != nil {
		return "", "", 0, err
	}
	st.seq++
	return name, st.copy, st.seq, nil
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
	for {
		base := it.ws
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, ao), PinName, PinInput{Workspace: base, Copy: it.copy, Code: it.in.Code}).Get(ctx, &out); err != nil {
			return err
		}
		if out.Copy == "" || out.Kept || it.ws == base {
			break
		}
		// A step of the copy the run leaves finished while the new one
		// was made from an older snapshot: it is made again from the newer.
	}
	if out.Copy != "" {
		if !out.Kept {
			it.wsSeq = 0 // the new copy numbers its snapshots from 1
		}
		it.copy = out.Copy
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

// keep takes a step's snapshot as the run's workspace when it is the
// newest of the copy the run is on: completions reach the workflow in an
// order of their own, and the snapshot heard of last may predate a file
// another step wrote. A snapshot without a number (a worker that numbers
// none) is taken as it comes.
func (it *interp) keep(out *StepOutput) {
	switch {
	case out.Workspace == "":
	case it.copy != "" && out.Copy != it.copy:
	case out.WorkspaceSeq != 0 && out.WorkspaceSeq <= it.wsSeq:
	default:
		it.ws, it.wsSeq = out.Workspace, out.WorkspaceSeq
	}
}

// ensurePinned pins the run to a host unless it has one (or a worker
// said the workspace is shared).
func (it *interp) ensurePinned(ctx workflow.Context) error {
	for it.host == "" && !it.shared {
		reason := "first step"
		if it.leftWhy != "" {
			reason, it.leftWhy = it.leftWhy, ""
		} else if len(it.hosts) > 0 {
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
			return it.anyNewer(workflow.WithActivityOptions(ctx, ao), name, arg(true), out)
		}
		host := it.host
		o := ao
		o.TaskQueue = HostQueue(workflow.GetInfo(ctx).TaskQueueName, host)
		o.ScheduleToStartTimeout = it.opt.HostTimeout
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, o), name, arg(false)).Get(ctx, out)
		var app *temporal.ApplicationError
		if err != nil && errors.As(err, &app) && app.Type() == errCodeTooOld && ctx.Err() == nil &&
			workflow.GetVersion(ctx, leaveOlderHost, workflow.DefaultVersion, 1) >= 1 {
			// The host's worker is an older build than the run needs
			// (an upgrade under way): the run moves to a host that is not.
			if it.host == host {
				it.host = ""
				it.leftWhy = "host " + host + " runs an older workflow code than the run needs"
			}
			continue
		}
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

// leaveOlderHost versions the move of a run off a host whose worker
// refuses its steps as too old (errCodeTooOld), and a step of the shared
// queue so refused being sent again (anyNewer).
const leaveOlderHost = "leave-older-host"

// anyNewer runs an activity of the shared queue; one that a worker older
// than the run refused (errCodeTooOld: an upgrade under way, old and new
// workers side by side) is sent again after a backoff, for a newer worker
// to take, as Temporal retries an attempt; after as many tries as the
// step's retry policy allows, the refusal is the step's error.
func (it *interp) anyNewer(ctx workflow.Context, name string, in, out any) error {
	wait := time.Second
	for try := 1; ; try++ {
		err := workflow.ExecuteActivity(ctx, name, in).Get(ctx, out)
		var app *temporal.ApplicationError
		if err == nil || !errors.As(err, &app) || app.Type() != errCodeTooOld || try == 20 || ctx.Err() != nil ||
			workflow.GetVersion(ctx, leaveOlderHost, workflow.DefaultVersion, 1) < 1 {
			return err
		}
		if workflow.Sleep(ctx, wait) != nil {
			return err
		}
		wait = min(2*wait, 30*time.Second)
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

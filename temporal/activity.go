package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/mask"
	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// StepInput is what the step activity needs: the plan (by its sha256 in
// the Store), the board as a chain head, and which visit to run.
type StepInput struct {
	PlanPath   string
	PlanSHA256 string
	Head       string // the board's chain head when the step starts
	Label      string
	Visit      int
	Attempt    int
	// Item is the value of a for_each item's visit (Label is LABEL[i]).
	Item    any `json:",omitempty"`
	Workdir string
	Vars    map[string]any
	// Reuse names the blackboard.json blobs of runs given to --reuse;
	// ReuseLive says a call of the run already went live.
	Reuse     []string `json:",omitempty"`
	ReuseLive bool     `json:",omitempty"`
	// StoreID is the run's store id (Input.StoreID).
	StoreID string `json:",omitempty"`
	// Workspace is the run's workspace manifest when it travels with the
	// run (hosts.go): the step runs in this host's copy of it.
	Workspace string `json:",omitempty"`
	// Copy names the copy of the workspace the run is on, and
	// WorkspaceSeq is Workspace's number in it (hosts.go): the host that
	// holds that copy runs the step in it.
	Copy         string `json:",omitempty"`
	WorkspaceSeq int64  `json:",omitempty"`
	// Beside says other steps of the run were running when this one was
	// handed Head (parallel children, for_each items): a worker whose copy
	// of the run is already past Head runs it on that copy.
	Beside bool `json:",omitempty"`
	// OnlyHost, on a local activity of a pinned run (local.go), names the
	// run's host: a worker that is not it runs nothing and says so
	// (StepOutput.Elsewhere).
	OnlyHost string `json:",omitempty"`
	// Code is the workflow code version the run needs (Input.Code, as the
	// workflow had it): a worker whose code is older refuses the step.
	Code int `json:",omitempty"`
	// Chunk, when set, is the board's newest chunk, which follows Prev:
	// the worker puts it in the store, its name is the step's Head and
	// goes back in StepOutput.Head (chain.go, ledger.take). Head is then
	// "", which a worker that knows nothing of Chunk cannot read.
	Chunk RawJSON `json:",omitempty"`
}

// StepOutput is one attempt's outcome, everything the workflow records:
// the saved result (blackboard.json's `result`), the error, and what the
// step added to the board itself (an llm step's conversation entries and
// its model recordings, exactly as runner records them).
type StepOutput struct {
	Result     RawJSON // JSON: output and the type's fields
	Goto       string
	Write      *board.WriteOp
	Error      string
	Entries    []board.Entry
	Recordings []board.Recording
	// Inputs are the step's templated fields as this attempt rendered
	// them (blackboard.json's `inputs`), which Result does not hold.
	Inputs map[string]string `json:",omitempty"`
	// Host names the host whose worker ran the attempt (the record's
	// `host`).
	Host string `json:",omitempty"`
	// Attempt is Temporal's attempt number of this activity (1, or more
	// when a worker was lost mid-step): the record counts the re-runs.
	Attempt int32 `json:",omitempty"`
	// Workspace is the run's workspace after the step, when it travels
	// with the run: the manifest another host takes the run over with.
	// Copy is the copy of the workspace the step ran in, WorkspaceSeq
	// the snapshot's number in it (hosts.go): the workflow keeps the
	// highest.
	Workspace    string `json:",omitempty"`
	Copy         string `json:",omitempty"`
	WorkspaceSeq int64  `json:",omitempty"`
	// Elsewhere: the worker is not StepInput.OnlyHost and ran nothing.
	Elsewhere bool `json:",omitempty"`
	// Head names StepInput.Chunk in the store, once put.
	Head string `json:",omitempty"`
}

// Activities runs steps for the workflow.
type Activities struct {
	Store Store
	Log   zerolog.Logger
	// health asks the server whether it is up (contact.go); NewWorker and
	// NewHostWorker set it from their client.
	health func(context.Context) error
	// Workdir, when set, is where steps run on this worker; else the run's.
	Workdir string
	// Heartbeat is how often a running step tells the server it is alive.
	Heartbeat time.Duration
	// LogMask, when set, learns each run's secrets (as this worker's
	// environment holds them): the worker's log writes through it.
	LogMask *mask.Masker
	// StoreID, when set, is Store's id (CheckWorkerStore): a step of a run
	// started with another store fails at once, not retried.
	StoreID string
	// HostID names this worker's host: runs pinned here send their steps
	// to its own task queue (hosts.go). WorkRoot is where it makes the
	// workspaces of runs that carry theirs (default DefaultWorkRoot).
	HostID, WorkRoot string
	// SharedWorkspace: this worker sees every run's workdir as its client
	// does (one host, or a shared disk): runs it takes are not pinned.
	SharedWorkspace bool

	wsMu   sync.Mutex
	hosted map[string]*hostState // by run id

	// The MCP servers of the steps running here (mcpservers.go).
	srvMu      sync.Mutex
	srvPools   map[*agents.Servers]struct{}
	srvStopped bool

	mu          sync.Mutex
	progs       map[string]*engine.Program
	runs        map[string]*runState    // by run id
	reuseBoards map[string]*board.Board // --reuse runs by blob name
}

// runState is a run's board and expression state on this worker, kept
// between steps so that the next step reads only the new chunks.
type runState struct {
	mu    sync.Mutex
	prog  *engine.Program
	head  string
	r     *engine.Runner
	reuse *agents.Reuse
	mask  *mask.Masker
	// dirty: a step on this worker added to the board itself, so the board
	// is ahead of the chain; the next step starts from the chain again.
	dirty bool
	// known are the chunks r holds (every head it has been at): a step
	// handed one of them comes from before r's head.
	known map[string]bool
}

// errBadInput marks a problem no retry can fix (the plan does not load).
const errBadInput = "runner.bad-input"

// RunStep runs one attempt of one leaf step.
func (a *Activities) RunStep(ctx context.Context, in StepInput) (*StepOutput, error) {
	return a.runStep(ctx, in, false)
}

// runStep runs one attempt: in the run's copy of its workspace on this
// host, or (spread) in a scratch copy of in.Workspace with a board of its
// own, left behind once the step's workspace is back in the store.
func (a *Activities) runStep(ctx context.Context, in StepInput, spread bool) (*StepOutput, error) {
	info := activity.GetInfo(ctx)
	runID := info.WorkflowExecution.ID
	if in.StoreID != "" && a.StoreID != "" && in.StoreID != a.StoreID {
		err := storeMismatch(in.StoreID, a.StoreID, a.Store.String(), "run "+runID)
		a.Log.Error().Str("run", runID).Str("run_store_id", in.StoreID).Str("store_id", a.StoreID).Msg(err.Error())
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), errStoreMismatch, nil)
	}
	if in.Code > codeVersion {
		err := codeTooOld(in.Code, runID, in.Label)
		a.Log.Error().Str("run", runID).Str("step", in.Label).Int("run_code", in.Code).Int("code", codeVersion).Msg(err.Error())
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), errCodeTooOld, nil)
	}
	if in.OnlyHost != "" && (a.SharedWorkspace || a.HostID != in.OnlyHost) {
		return &StepOutput{Elsewhere: true}, nil
	}
	// Heartbeats tell the server the worker is alive (one killed is
	// noticed after HeartbeatTimeout), bring cancellation to ctx and
	// checkpoint the step's model calls (activity_checkpoint.go).
	// A worker cut off from the server stops its step (contact.go).
	// They run from the activity's start to its end: making the
	// workspace, reading the plan and board before the step, and putting
	// the workspace back in the store after it may each take longer than
	// the heartbeat timeout (a big workspace, a far store), and a live
	// worker's attempt timed out there would run again beside itself.
	actx := ctx
	ctx, lost := context.WithCancelCause(ctx)
	defer lost(nil)
	var details atomic.Value // func() []any: what the next beat carries
	details.Store(carried(ctx))
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		a.heartbeat(ctx, stop, func() []any { return details.Load().(func() []any)() }, lost)
	}()
	var endBeats sync.Once
	defer endBeats.Do(func() { close(stop); <-stopped })
	// The board's chunk the step carries is written under the beats too:
	// a far or slow store may take longer than the heartbeat timeout.
	var head string
	if len(in.Chunk) > 0 {
		name, err := a.Store.Put(in.Chunk)
		if err != nil {
			return nil, fmt.Errorf("host %s: writing the board's chunk to the store: %w", a.hostName(), err)
		}
		in.Head, head = name, name
	}

	planPath := in.PlanPath
	var scratch *Manifest
	var scratchRoot string
	if spread {
		root, m, done, err := a.scratch(runID, in.Workspace)
		if err != nil {
			return nil, err
		}
		defer done()
		scratch, scratchRoot = m, root
		planPath = filepath.Join(root, filepath.FromSlash(m.PlanDir), m.Plan)
		in.Workdir = filepath.Join(root, filepath.FromSlash(m.Workdir))
	} else if in.Workspace != "" {
		// The run's files are in this host's copy of its workspace.
		st, _, err := a.hostCopy(runID, wsWant{Manifest: in.Workspace, Copy: in.Copy, Seq: in.WorkspaceSeq}, false)
		if err != nil {
			return nil, err
		}
		planPath = filepath.Join(st.root, filepath.FromSlash(st.m.PlanDir), st.m.Plan)
		in.Workdir = filepath.Join(st.root, filepath.FromSlash(st.m.Workdir))
	}
	// A scratch copy's path is the step's own: its program is not kept.
	prog, err := a.program(planPath, in.PlanSHA256, !spread)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), errBadInput, err)
	}
	n := prog.Node(in.Label)
	if n != nil {
		n = n.WithItem(in.Item)
	}
	if n == nil || n.Kind == nil {
		err := fmt.Errorf("step %q is not a leaf step of plan %s", in.Label, in.PlanPath)
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), errBadInput, err)
	}
	st := &runState{prog: prog}
	if !spread {
		st = a.runState(runID, prog)
	}
	r, err := a.stateOf(st, prog, in)
	if err != nil {
		return nil, err // retried: the store may be catching up
	}
	if in.ReuseLive && st.reuse != nil {
		st.reuse.GoLive()
	}
	b := r.Board
	seq, nrec := lastSeq(b), len(b.Recordings())
	resumeCheckpoint(ctx, r, in.Label, in.Visit)

	details.Store(func() []any { return checkpointOf(b, nrec, in.Label, in.Visit) })
	sctx, endServers := a.stepServers(ctx)
	res, stepErr := r.RunAttempt(sctx, n, in.Visit, in.Attempt)
	endServers() // before the step's end is reported: none outlives the run

	out := &StepOutput{Goto: res.Goto, Write: res.Write, Inputs: res.Inputs(), Host: a.hostName(), Attempt: info.Attempt, Head: head}
	if stepErr != nil {
		out.Error = stepErr.Error()
	}
	var enc json.RawMessage
	if enc, err = engine.EncodeResult(res); err != nil {
		enc, _ = engine.EncodeResult(engine.Result{})
		out.Error = err.Error()
	}
	out.Result = RawJSON(enc)
	out.masked(st.masker()) // entries and recordings were masked as they entered the board
	out.Entries = b.Query(board.Filter{AfterSeq: seq, Label: in.Label})
	for _, rec := range b.Recordings()[nrec:] {
		if rec.Label == in.Label && rec.Visit == in.Visit {
			out.Recordings = append(out.Recordings, rec)
		}
	}
	if spread {
		if out.Workspace, err = snapshot(a.Store, scratch, scratchRoot, b.Run().ID, hashCache{}); err != nil {
			return nil, fmt.Errorf("host %s: keeping the item's workspace: %w", a.hostName(), err)
		}
	} else if in.Workspace != "" {
		if out.Workspace, out.Copy, out.WorkspaceSeq, err = a.snapshot(runID, b.Run().ID); err != nil {
			return nil, fmt.Errorf("host %s: keeping the run's workspace: %w", a.HostID, err)
		}
	}
	endBeats.Do(func() { close(stop); <-stopped })
	if !spread && (len(out.Entries) > 0 || len(out.Recordings) > 0) {
		a.mu.Lock()
		if st := a.runs[runID]; st != nil {
			st.dirty = true
		}
		a.mu.Unlock()
	}
	if cause := context.Cause(ctx); actx.Err() == nil && errors.Is(cause, errContactLost) {
		a.Log.Error().Str("run", runID).Str("step", in.Label).Int("visit", in.Visit).Msg(cause.Error())
		return nil, cause // the server has already timed this attempt out
	}
	if ctx.Err() != nil {
		// Canceled (a sibling's fail_fast, an interrupt): what the step
		// learned before it stopped goes back with the cancellation, as a
		// run in one process records it; the workflow knows the cause.
		return nil, temporal.NewCanceledError(out)
	}
	return out, nil
}

func lastSeq(b *board.Board) int64 {
	if es := b.Query(board.Filter{Limit: 1}); len(es) > 0 {
		return es[0].Seq
	}
	return 0
}

// heartbeat beats every a.Heartbeat until stop. The first beat waits one
// interval (at most half the heartbeat timeout): a step that ends sooner
// costs the server no heartbeat, which is an RPC and a write of the
// activity's state, and its completion tells the server all a beat would.
func (a *Activities) heartbeat(ctx context.Context, stop chan struct{}, details func() []any, lost context.CancelCauseFunc) {
	every := a.Heartbeat
	alive := newContact(ctx, time.Now(), a.health)
	if every <= 0 {
		every = time.Second
	}
	first := every
	if ht := activity.GetInfo(ctx).HeartbeatTimeout; ht > 0 && ht/2 < first {
		first = ht / 2
	}
	wait := time.NewTimer(first)
	defer wait.Stop()
	select {
	case <-stop:
		return
	case <-ctx.Done():
		return
	case <-wait.C:
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		activity.RecordHeartbeat(ctx, details()...)
		if err := alive.beat(ctx, every, time.Now); err != nil {
			lost(err)
			return
		}
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// program compiles a plan once per worker; the source comes from the
// Store, checked against its sha256.
func (a *Activities) program(path, sum string, keep bool) (*engine.Program, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	// By path too: a plan's path (its run.plan_dir) differs between runs
	// whose workspaces travel with them.
	key := sum + "\x00" + path
	if p := a.progs[key]; p != nil {
		return p, nil
	}
	src, err := a.Store.Get(sum)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	p, err := engine.Compile(path, src, steps.Registry())
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	if !keep {
		return p, nil
	}
	if a.progs == nil {
		a.progs = map[string]*engine.Program{}
	}
	a.progs[key] = p
	return p, nil
}

// state brings this worker's copy of the run up to in.Head.
func (a *Activities) state(runID string, prog *engine.Program, in StepInput) (*engine.Runner, error) {
	return a.stateOf(a.runState(runID, prog), prog, in)
}

// stateOf brings st, a copy of the run, up to in.Head.
func (a *Activities) stateOf(st *runState, prog *engine.Program, in StepInput) (*engine.Runner, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.r != nil && (st.head == in.Head || in.Beside && st.known[in.Head]) {
		// A step handed an earlier head than this worker's copy is at
		// was dispatched beside steps that have finished since (parallel
		// children and for_each items start in one order and reach
		// their worker in another). It sees what they finished, as a
		// step in one process sees what its siblings finished before it
		// started; rebuilding the older board from the whole chain cost
		// every such step the run's length (quadratic in a big for_each).
		return st.r, nil
	}
	cs, met, err := readChain(a.Store, in.Head, st.head)
	if err != nil {
		return nil, err
	}
	fresh := st.r == nil || !met
	for _, c := range cs {
		// Another worker's model calls move the agents' counters: start
		// again, so the agent set reads them back from the recordings.
		if movesCounters(c.Recordings) && !fresh {
			cs, _, err = readChain(a.Store, in.Head, "")
			if err != nil {
				return nil, err
			}
			fresh = true
			break
		}
	}
	if fresh {
		if len(cs) == 0 || cs[0].Run == nil {
			return nil, fmt.Errorf("board chain %s does not start with the run", in.Head)
		}
		r, u, m, err := a.newRunner(prog, *cs[0].Run, in)
		if err != nil {
			return nil, err
		}
		st.r, st.reuse, st.mask = r, u, m
		st.known = map[string]bool{}
	}
	for _, c := range cs {
		st.known[c.name] = true
		if err := c.apply(st.r.Board); err != nil {
			return nil, err
		}
		for _, rec := range c.Steps {
			if err := st.r.Apply(rec); err != nil {
				return nil, err
			}
		}
	}
	st.head = in.Head
	return st.r, nil
}

// movesCounters reports whether recordings may move the agents'
// counters: any but the interpreter's own (a for_each's items, a call's
// vars), which a worker only adds to its board.
func movesCounters(recs []board.Recording) bool {
	for _, r := range recs {
		if r.Kind != engine.KindItems && r.Kind != engine.KindCallVars {
			return true
		}
	}
	return false
}

// runState is the run's state on this worker, a fresh one when the kept
// one is ahead of the chain or for another plan. At most maxRuns are kept.
func (a *Activities) runState(runID string, prog *engine.Program) *runState {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.runs == nil {
		a.runs = map[string]*runState{}
	}
	st := a.runs[runID]
	if st == nil || st.dirty || st.prog != prog {
		if len(a.runs) >= maxRuns {
			for k := range a.runs { // forget any one: it rebuilds from the chain if needed
				delete(a.runs, k)
				break
			}
		}
		st = &runState{prog: prog}
		a.runs[runID] = st
	}
	return st
}

const maxRuns = 256

// masker is the run's secret mask in st (made again meanwhile, by a
// parallel sibling's state, under st's lock).
func (st *runState) masker() *mask.Masker {
	st.mu.Lock()
	m := st.mask
	st.mu.Unlock()
	if m == nil {
		return mask.New()
	}
	return m
}

// reused reads the runs given to --reuse from the Store, once per worker.
func (a *Activities) reused(names []string) ([]*board.Board, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*board.Board
	for _, name := range names {
		if b := a.reuseBoards[name]; b != nil {
			out = append(out, b)
			continue
		}
		data, err := a.Store.Get(name)
		if err != nil {
			return nil, fmt.Errorf("--reuse: %w", err)
		}
		b, err := board.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("--reuse %s: %w", name, err)
		}
		if a.reuseBoards == nil {
			a.reuseBoards = map[string]*board.Board{}
		}
		a.reuseBoards[name] = b
		out = append(out, b)
	}
	return out, nil
}

func (a *Activities) newRunner(prog *engine.Program, run board.Run, in StepInput) (*engine.Runner, *agents.Reuse, *mask.Masker, error) {
	wd := a.Workdir
	if wd == "" || in.Workspace != "" {
		wd = in.Workdir
	}
	if fi, err := os.Stat(wd); err != nil || !fi.IsDir() {
		return nil, nil, nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"host %s: workdir %s does not exist on this worker (start the worker with --workdir, or let the workspace travel with the run)", a.hostName(), wd), errBadInput, nil)
	}
	plan := prog.Plan
	if len(run.Agents) > 0 {
		// The run's --agent overrides, on a copy of the plan of its own
		// (the compiled program is shared by every run).
		p, err := plans.Parse(run.PlanPath, []byte(run.PlanSource))
		if err == nil {
			err = p.Override(run.Agents)
		}
		if err != nil {
			return nil, nil, nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("the run's agent overrides: %v", err), errBadInput, err)
		}
		plan = p
	}
	b := board.New(run)
	m := secretMask(plan) // an overridden api_key_env is a secret too
	a.LogMask.Add(secretValues(plan)...)
	b.SetRedact(m.String)
	var set *agents.Set
	var reuse *agents.Reuse
	if len(plan.Agents) > 0 {
		if len(in.Reuse) > 0 {
			runs, err := a.reused(in.Reuse)
			if err != nil {
				return nil, nil, nil, err // retried: the store may be catching up
			}
			reuse = agents.NewReuse(runs...)
		}
		var err error
		if set, err = agents.New(plan, agents.Options{Log: a.Log, Reuse: reuse, Mask: m}); err != nil {
			// A missing API key: every attempt would fail the same way.
			return nil, nil, nil, temporal.NewNonRetryableApplicationError(err.Error(), errBadInput, err)
		}
	}
	r := &engine.Runner{Prog: prog, Board: b, Log: a.Log, Workdir: wd, Vars: engine.SavedVars(prog.Plan, in.Vars), Agents: set}
	r.Prepare()
	return r, reuse, m, nil
}

// hostName names this worker's host in errors.
func (a *Activities) hostName() string {
	if a.HostID != "" {
		return a.HostID
	}
	name, _ := os.Hostname()
	return name
}

// Forget drops a finished run's state from this worker.
func (a *Activities) Forget(runID string) {
	a.mu.Lock()
	delete(a.runs, runID)
	a.mu.Unlock()
}

package temporal

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/steps"
	"github.com/rs/zerolog"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Names the workflow and activity are registered under.
const (
	WorkflowName = "runner.plan"
	ActivityName = "runner.step"
	ProgressName = "runner.progress"
)

// Input starts a run: the run description (id, the plan's source and
// sha256, vars, workdir) pinned for the whole run, and, after a
// continue-as-new, where the previous part stopped.
type Input struct {
	Run     board.Run
	Options Options
	Carry   *Carry `json:",omitempty"`
	// Reuse are earlier runs whose model answers this run reuses while
	// the requests match (runner run --reuse): their paths, and their
	// blackboard.json bytes in the Store.
	Reuse []Reused `json:",omitempty"`
	// StoreID is the id of the store the client used (storeid.go): each
	// step carries it, and a worker with another store refuses the step.
	StoreID string `json:",omitempty"`
	// Code is the workflow code version the run needs (build.go): the
	// starting client's, then the newest that served it.
	Code int `json:",omitempty"`
	// Workspace is the run's workspace manifest in the Store (the plan's
	// directory, hosts.go): the run is pinned to one host, which makes it.
	// "": the workspace is shared (every worker sees the run's workdir).
	Workspace string `json:",omitempty"`
}

// Reused is one earlier run given to --reuse.
type Reused struct {
	Path string // as given, made absolute
	Blob string // the file's bytes in the Store
}

// Options tune the workflow; zero values take the defaults.
type Options struct {
	// HeartbeatTimeout: a step's worker that stays silent this long is
	// taken for dead and the step is run again on another (default 20s).
	HeartbeatTimeout time.Duration
	// StepTimeout bounds an activity that has no `timeout` (default 24h).
	StepTimeout time.Duration
	// The run continues as new at the next top-level step once its history
	// passes either bound (defaults 10,000 events and 8 MB; Temporal's
	// limits are 50k events and 50 MB), or when the server suggests it.
	MaxHistoryEvents int
	MaxHistoryBytes  int
	// SearchAttributes: the namespace has runner's search attributes
	// (search.go), so the run keeps them up to date.
	SearchAttributes bool `json:",omitempty"`
	// HostTimeout: a step that waits this long for the host its run is
	// pinned to (the host's worker is gone) pins the run to another host
	// (default 20s: with the heartbeat timeout, a host that dies in the
	// middle of a step loses its run within about 41s; a host whose
	// --max-concurrent-steps makes steps queue longer needs more).
	HostTimeout time.Duration `json:",omitempty"`
	// LocalStepsUnder: a command step whose own timeout is at most this
	// runs as a local activity (local.go); 0: none does.
	LocalStepsUnder time.Duration `json:",omitempty"`
	// KeepFanOuts keeps a for_each's items and a parallel group's
	// children on the run's host instead of spreading them over the pool
	// (spread.go).
	KeepFanOuts bool `json:",omitempty"`
}

// The defaults of Options.HeartbeatTimeout and HostTimeout. A host that
// dies in the middle of a step is noticed by the step's heartbeat
// timeout; its retry then waits the host timeout on the dead host's queue
// (plus the retry's first backoff, a second) before the run moves to
// another host: 41s in all, well within a minute. A step costs no more
// for them: a worker's first heartbeat waits one interval (1s, or half
// the heartbeat timeout), so a shorter step sends none.
const (
	DefaultHeartbeatTimeout = 20 * time.Second
	DefaultHostTimeout      = 20 * time.Second
)

func (o Options) withDefaults() Options {
	if o.HeartbeatTimeout <= 0 {
		o.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if o.StepTimeout <= 0 {
		o.StepTimeout = 24 * time.Hour
	}
	if o.MaxHistoryEvents <= 0 {
		o.MaxHistoryEvents = 10000
	}
	if o.MaxHistoryBytes <= 0 {
		o.MaxHistoryBytes = 8 << 20
	}
	if o.HostTimeout <= 0 {
		o.HostTimeout = DefaultHostTimeout
	}
	return o
}

// Carry is what a continued run starts from: the board (a chain head),
// the next top-level step and the visit counts.
type Carry struct {
	Head   string
	PC     int
	Visits map[string]int
	Total  int64
	Parts  int                // continue-as-new count so far
	Base   int                // step records before this part
	Recent []board.StepRecord // the last records, results left out, for progress
	// The host the run is pinned to, its workspace's latest manifest and
	// the hosts so far (hosts.go).
	Host      string `json:",omitempty"`
	Workspace string `json:",omitempty"`
	Hosts     []Pin  `json:",omitempty"`
	// The copy of the workspace the run is on and Workspace's number in it.
	Copy         string `json:",omitempty"`
	WorkspaceSeq int64  `json:",omitempty"`
	// Mid: the part begins inside the step at PC, a for_each stopped
	// between items (fanout.go): its recorded items are not run again.
	Mid bool `json:",omitempty"`
	// FanOuts are the spread fan-outs open when the part ended (a for_each
	// stopped between items), and Merges the merges so far (spread.go).
	FanOuts []*FanOut `json:",omitempty"`
	Merges  int       `json:",omitempty"`
}

// Output is how the run ended and its final board's chain head.
type Output struct {
	Head   string
	Status string
	Error  string
	Parts  int
	// Workspace is the run's final workspace manifest, when its workspace
	// travelled with it (SyncBack writes it out); Hosts are the hosts its
	// steps ran on, in order, each with why the run went there.
	Workspace string `json:",omitempty"`
	Hosts     []Pin  `json:",omitempty"`
}

// Progress is what the progress query returns: step records finished
// since a given index (results left out), the steps running now, and the
// input steps waiting for an answer.
type Progress struct {
	Next    int // the index after the last record returned
	Steps   []board.StepRecord
	Running []Running
	Waiting []board.WaitingInput `json:",omitempty"`
}

// Running is a step visit under way.
type Running struct {
	Label, Parent string
	Visit         int
}

// Workflow is the interpreter. It holds the Store the board chain lives in.
type Workflow struct {
	Store Store
}

// Run executes the plan in in.Run.PlanSource.
func (w *Workflow) Run(ctx workflow.Context, in Input) (*Output, error) {
	in.Code = checkCodeVersion(ctx, in.Code)
	run := in.Run
	if Sum([]byte(run.PlanSource)) != run.PlanSHA256 {
		return nil, temporal.NewNonRetryableApplicationError("the plan source does not match its sha256", errBadInput, nil)
	}
	prog, err := engine.Compile(run.PlanPath, []byte(run.PlanSource), steps.Registry())
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("plan %s: %v", run.PlanPath, err), errBadInput, err)
	}
	it := &interp{store: w.Store, prog: prog, opt: in.Options.withDefaults(), in: in,
		running: map[string]Running{}, answered: map[string]bool{}}
	if err := it.start(ctx); err != nil {
		if it.io.direct {
			panic(err) // the store failed: let the task retry rather than fail the run
		}
		return nil, err // the store's activities retry: this is not the store
	}
	if err := workflow.SetQueryHandler(ctx, ProgressName, it.progress); err != nil {
		return nil, err
	}
	if err := it.serve(ctx); err != nil {
		return nil, err
	}
	return it.run(ctx)
}

type interp struct {
	store Store
	io    storeIO // the Store, through local activities (storeact.go)
	prog  *engine.Program
	opt   Options
	in    Input
	r     *engine.Runner
	b     *board.Board
	led   *ledger
	root  workflow.Context // the workflow's: canceled when the run is interrupted
	seq   int              // cancellations so far (see cancelNode)

	startPC  int
	parts    int
	base     int
	recs     []board.StepRecord // this part's records, for progress
	running  map[string]Running
	order    []string        // running keys in start order
	answered map[string]bool // input visits answered by an update
	live     bool            // a model call of the run was answered live (see --reuse)
	ended    bool            // the run has its final status: no more writes

	// Where the run's steps go (hosts.go): the host it is pinned to (""
	// until its first step that touches the world), the newest snapshot
	// of its workspace (ws, numbered wsSeq in the copy named copy), the
	// hosts so far, and a pin under way.
	host    string
	ws      string
	copy    string
	wsSeq   int64
	hosts   []Pin
	pinning bool
	shared  bool // a worker with --shared-workspace took the run
	// notHost is a host whose steps a local activity found the workflow
	// task's worker is not (local.go): they go to its queue from then on.
	notHost string
	// leftWhy is why the run left its host, for the next pin's record
	// ("": the host stopped taking its tasks).
	leftWhy string

	// A for_each stopped between items for the next part (fanout.go).
	topPC        int            // the top-level step under way
	itemsCut     bool           // no item starts any more in this part
	inflight     map[string]int // items under way: the events each will add
	itemsStarted int            // items started in this part

	// Spread fan-outs (spread.go): open ones by for_each or group label, ended ones
	// whose changes are not yet in ws, a merge under way, merges so far.
	fanouts  map[string]*FanOut
	toMerge  []*FanOut
	settling bool
	merges   int
}

// start builds the board: new, or the carried one read back from the chain.
func (it *interp) start(ctx workflow.Context) error {
	run := it.in.Run
	// Histories from before storeActivities read and wrote the Store in
	// the workflow task; today's do it in local activities.
	it.io = storeIO{acts: storeActs{store: it.store},
		direct: workflow.GetVersion(ctx, storeActivities, workflow.DefaultVersion, 1) == workflow.DefaultVersion}
	it.led = &ledger{io: it.io}
	if _, err := it.io.put(ctx, []byte(run.PlanSource)); err != nil {
		return err
	}
	it.ws = it.in.Workspace
	if c := it.in.Carry; c != nil {
		b, err := it.io.loadBoard(ctx, c.Head)
		if err != nil {
			return err
		}
		it.b = b
		it.led.head = c.Head
		it.led.lastSeq = lastSeq(b)
		it.led.nrec = len(b.Recordings())
		it.startPC, it.parts, it.base = c.PC, c.Parts, c.Base
		it.recs = c.Recent
		it.base -= len(c.Recent)
		it.host, it.ws, it.hosts = c.Host, c.Workspace, c.Hosts
		it.copy, it.wsSeq = c.Copy, c.WorkspaceSeq
		it.merges = c.Merges
		for _, fo := range c.FanOuts {
			if it.fanouts == nil {
				it.fanouts = map[string]*FanOut{}
			}
			fo.ready = true
			if fo.Items == nil {
				fo.Items = map[int]string{}
			}
			it.fanouts[fo.Label] = fo
		}
	} else {
		it.b = board.New(run)
		it.led.run = &run
	}
	it.b.SetClock(func() time.Time { return workflow.Now(ctx).UTC() })
	// Pure steps (and expressions) can hold a secret too: the board masks
	// them as a local run's does, before anything reaches the store.
	it.b.SetRedact(secretMask(it.prog.Plan).String)
	vars := engine.SavedVars(it.prog.Plan, run.Vars)
	seed := binary.LittleEndian.Uint64([]byte(Sum([]byte(run.ID))[:8]))
	var total int64
	if c := it.in.Carry; c != nil {
		total = c.Total
	}
	rng := rand.New(rand.NewPCG(seed, uint64(total)))
	it.r = &engine.Runner{Prog: it.prog, Board: it.b, Log: zerolog.Nop(), Workdir: run.Workdir, Vars: vars,
		Jitter: rng.Float64, Clock: func() time.Time { return workflow.Now(ctx).UTC() }}
	if workflow.GetVersion(ctx, secretsDecided, workflow.DefaultVersion, 1) >= 1 {
		// Expressions on secrets are decided once, recorded: not from the
		// environment of whichever worker runs the workflow task.
		decideSecrets(ctx, it.r, it.prog.Plan)
	}
	// files() and read_file() in the workflow (a for_each list, an if)
	// read the worker's workdir once; the history keeps what they gave.
	it.r.Workspace = func(call engine.WorkspaceCall, read func() (json.RawMessage, error)) (json.RawMessage, error) {
		var raw json.RawMessage
		if it.pinned(ctx) {
			// The workdir is on the run's host: ask it.
			if err := it.settle(ctx); err != nil {
				return nil, err
			}
			if err := it.ensurePinned(ctx); err != nil {
				return nil, err
			}
			if !it.shared {
				ro := readOptions
				ro.HeartbeatTimeout = it.opt.HeartbeatTimeout // a dead host is noticed as for a step
				err := it.onHost(ctx, ro, WorkspaceReadName, func(bool) any { return WorkspaceRead{Workspace: it.ws, Copy: it.copy, Seq: it.wsSeq, Call: call} }, &raw, nil)
				return raw, err
			}
		}
		err := workflow.SideEffect(ctx, func(workflow.Context) any {
			out, err := read()
			if err != nil {
				out, _ = json.Marshal(engine.WorkspaceAnswer{Error: err.Error()})
			}
			return out
		}).Get(&raw)
		return raw, err
	}
	it.r.Prepare()
	for _, rec := range it.b.Recordings() { // once: a continued run's
		it.live = it.live || agents.WentLive(rec)
	}
	if c := it.in.Carry; c != nil {
		it.r.SetCounts(c.Visits, c.Total)
		for _, rec := range it.b.Steps() {
			if err := it.r.Apply(rec); err != nil {
				return err
			}
		}
		if c.Mid {
			it.r.Continuing(it.b.Steps())
		}
	}
	return nil
}

func (it *interp) progress(since int) (Progress, error) {
	p := Progress{Next: it.base + len(it.recs)}
	if i := since - it.base; i < len(it.recs) {
		p.Steps = it.recs[max(i, 0):]
	}
	for _, k := range it.order {
		p.Running = append(p.Running, it.running[k])
	}
	p.Waiting = it.b.Run().Waiting
	return p, nil
}

func (it *interp) run(ctx workflow.Context) (*Output, error) {
	it.root = ctx
	runC, cancelRun := it.WithCancel(wctx{ctx: ctx})
	if lim := it.prog.Plan.Limits.Timeout; lim > 0 {
		left := lim - workflow.Now(ctx).Sub(it.in.Run.StartedAt)
		tctx, cancelTimer := workflow.WithCancel(ctx)
		defer cancelTimer()
		workflow.Go(tctx, func(c workflow.Context) {
			if left > 0 && workflow.Sleep(c, left) != nil {
				return
			}
			cancelRun(engine.TimeoutCause(lim))
		})
	}
	err := engine.Drive(runC, it.r, it, it.startPC)
	var can *workflow.ContinueAsNewError
	if errors.As(err, &can) {
		return nil, err
	}
	if errors.Is(err, engine.ErrContinued) { // a for_each stopped between items (fanout.go)
		return nil, it.continueAsNew(ctx, it.topPC, true)
	}
	return it.finish(ctx, err)
}

func (it *interp) tooLong(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetCurrentHistoryLength() >= it.opt.MaxHistoryEvents ||
		info.GetCurrentHistorySize() >= it.opt.MaxHistoryBytes || info.GetContinueAsNewSuggested()
}

// continueAsNew writes the whole board as one chunk (so the next part and
// the workers read one blob, not the whole chain) and starts the next part.
func (it *interp) continueAsNew(ctx workflow.Context, pc int, mid bool) error {
	run := it.b.Run()
	c := &chunk{Run: &run, Entries: it.b.Entries(), Steps: it.b.Steps(), Recordings: it.b.Recordings()}
	data, err := encodeChunk(c)
	if err != nil {
		return err
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	head, err := it.io.put(dctx, data)
	if err != nil {
		if it.io.direct {
			panic(err)
		}
		return err
	}
	recent := it.recs
	if len(recent) > 64 {
		recent = recent[len(recent)-64:]
	}
	if err := it.settle(ctx); err != nil {
		return err
	}
	in := it.in
	visits, total := it.r.Counts()
	in.Carry = &Carry{Head: head, PC: pc, Visits: visits, Total: total, Parts: it.parts + 1,
		Base: it.base + len(it.recs), Recent: recent, Host: it.host, Workspace: it.ws, Hosts: it.hosts, Mid: mid,
		Copy: it.copy, WorkspaceSeq: it.wsSeq, Merges: it.merges}
	for _, fo := range it.fanouts {
		in.Carry.FanOuts = append(in.Carry.FanOuts, fo)
	}
	sort.Slice(in.Carry.FanOuts, func(i, j int) bool { return in.Carry.FanOuts[i].Label < in.Carry.FanOuts[j].Label })
	return workflow.NewContinueAsNewError(ctx, WorkflowName, in)
}

// finish marks the run's final status and writes the last chunk.
func (it *interp) finish(ctx workflow.Context, err error) (*Output, error) {
	status, msg := engine.StatusSucceeded, ""
	if err != nil {
		var re *engine.RunError
		if !errors.As(err, &re) {
			re = &engine.RunError{Status: engine.StatusFailed, Err: err}
		}
		status, msg = re.Status, re.Error()
	}
	it.endFanOuts()
	if serr := it.settle(ctx); serr != nil {
		return nil, serr
	}
	it.ended = true
	now := workflow.Now(ctx).UTC()
	var reused *board.Reused
	if len(it.in.Reuse) > 0 {
		// What --reuse took, read from the recordings: each worker saw
		// only its own calls.
		st := agents.StatsOf(it.b.Recordings())
		reused = &board.Reused{ReusedCalls: st.ReusedCalls, ReusedTokens: st.ReusedTokens, LiveCalls: st.LiveCalls, LiveTokens: st.LiveTokens}
		for _, r := range it.in.Reuse {
			reused.From = append(reused.From, r.Path)
		}
	}
	it.upsert(ctx, saStatus.ValueSet(status), saWaiting.ValueSet(false))
	if uerr := it.b.UpdateRun(func(r *board.Run) {
		r.Status, r.Error, r.FinishedAt = status, msg, &now
		if reused != nil {
			r.Reused = reused
		}
	}); uerr != nil {
		return nil, uerr
	}
	run := it.b.Run()
	it.led.run = &run
	head, ferr := it.led.flush(ctx, it.b)
	if ferr != nil {
		if it.io.direct {
			panic(ferr) // as the workflow before storeActivities did
		}
		return nil, ferr
	}
	out := &Output{Head: head, Status: status, Error: run.Error, Parts: it.parts, // run.Error as the board keeps it: masked
		Hosts: it.hosts}
	if it.in.Workspace != "" {
		out.Workspace = it.ws
	}
	if status != engine.StatusSucceeded && workflow.GetVersion(ctx, planFailsWorkflow, workflow.DefaultVersion, 1) >= 1 {
		// Temporal's own tools (the UI, `temporal workflow list --query
		// 'ExecutionStatus="Failed"'`) show a plan that failed as failed.
		// The output rides along as the error's details (OutputOf).
		if ctx.Err() != nil {
			return nil, temporal.NewCanceledError(*out)
		}
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("plan %s %s: %s", it.prog.Plan.Name, status, run.Error),
			ErrPlanFailed, nil, *out)
	}
	return out, nil
}

// planFailsWorkflow versions the change that made a plan's failure the
// workflow's: histories recorded before it complete with the output.
const planFailsWorkflow = "plan-failure-fails-workflow"

// ErrPlanFailed is the type of the error a workflow whose plan did not
// succeed fails with; its details are the run's Output.
const ErrPlanFailed = "runner.PlanFailed"

// OutputOf reads a run's Output from what getting the workflow's result
// returned: the result itself (err nil, out filled by Get), or the output
// a failed or interrupted plan carries in its error. Any other error is
// returned as it is.
func OutputOf(err error, out *Output) error {
	if err == nil {
		return nil
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == ErrPlanFailed && app.HasDetails() && app.Details(out) == nil {
		return nil
	}
	var can *temporal.CanceledError
	if errors.As(err, &can) && can.HasDetails() && can.Details(out) == nil && out.Head != "" {
		return nil
	}
	return err
}

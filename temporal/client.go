package temporal

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/runs"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// StartOptions say how to start a plan on Temporal.
type StartOptions struct {
	TaskQueue string
	Options   Options
	Reuse     []Reused // see Input.Reuse
	// PlanName is the RunnerPlan search attribute (with
	// Options.SearchAttributes): the plan's name, else its file's.
	PlanName string
	// StoreID is the store's id, recorded in the run (Input.StoreID and
	// its memo); empty, Start reads it from the store.
	StoreID string
	// SharedWorkspace: every worker sees the run's workdir and plan at the
	// client's paths (one host, a shared disk): the plan's directory does
	// not travel with the run and its steps go to any worker.
	SharedWorkspace bool
}

// Start starts run (its id, plan source and sha256, vars, workdir) as a
// workflow whose id is WorkflowIDOf(run).
func Start(ctx context.Context, c client.Client, store Store, run board.Run, opt StartOptions) (client.WorkflowRun, error) {
	if opt.StoreID == "" {
		id, err := store.ID()
		if err != nil {
			return nil, fmt.Errorf("the store %s: %w", store, err)
		}
		opt.StoreID = id
	}
	if opt.TaskQueue == "" {
		opt.TaskQueue = DefaultTaskQueue
	}
	if err := ClaimQueueStore(ctx, c, opt.TaskQueue, store, opt.StoreID, "client"); err != nil {
		return nil, err
	}
	if _, err := store.Put([]byte(run.PlanSource)); err != nil {
		return nil, err
	}
	in := Input{Run: run, Options: opt.Options, Reuse: opt.Reuse, StoreID: opt.StoreID, Code: WorkflowCodeVersion()}
	if !opt.SharedWorkspace {
		// The plan's directory travels with the run (workspace.go).
		ws, err := PackWorkspace(store, run.PlanPath, run.Workdir)
		if err != nil {
			return nil, &runs.UsageError{Err: fmt.Errorf("the run's workspace: %w", err)}
		}
		in.Workspace = ws
	}
	so := client.StartWorkflowOptions{ID: WorkflowIDOf(run), TaskQueue: opt.TaskQueue, Memo: map[string]any{StoreIDMemo: opt.StoreID, CodeVersionMemo: in.Code}}
	if opt.Options.SearchAttributes {
		so.TypedSearchAttributes = startAttributes(cmp.Or(opt.PlanName, filepath.Base(run.PlanPath)), run.RunnerVersion)
	}
	return c.ExecuteWorkflow(ctx, so, WorkflowName, in)
}

// PutReused checks each file given to --reuse (a saved run) and puts it
// in the store, so every worker reads it.
func PutReused(store Store, paths []string) ([]Reused, error) {
	var out []Reused
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(abs)
		if err != nil {
			return nil, fmt.Errorf("--reuse %s: %w", p, err)
		}
		if _, err := board.Parse(data); err != nil {
			return nil, fmt.Errorf("--reuse %s: %w", p, err)
		}
		name, err := store.Put(data)
		if err != nil {
			return nil, fmt.Errorf("--reuse %s: %w", p, err)
		}
		out = append(out, Reused{Path: abs, Blob: name})
	}
	return out, nil
}

// RunOptions say how RunPlan runs a plan on Temporal.
type RunOptions struct {
	StartOptions
	// Remote says where the run lives (HostPort, Namespace, TaskQueue,
	// Blobs); it is written beside the run's board (liveboard.WriteRemote)
	// so that runner board and runner answer reach the run while it runs.
	// RunPlan fills in Engine, WorkflowID, RunID and Board.
	Remote liveboard.Remote
	// ReuseFiles are saved runs whose model answers are reused (see
	// PutReused).
	ReuseFiles []string
	// Started, when set, is called with the workflow's id once it started.
	Started func(workflowID string)
	// SearchAttributesFrom is the namespace whose search attributes decide
	// whether the run sets runner's (search.go): those it lacks are
	// registered where it allows, else Warn is told; "": it sets none.
	SearchAttributesFrom string
	Warn                 func(string)
	// Observer is told of steps as they start and finish (and, as a
	// WaitObserver, of inputs that wait); Every is how often it is polled.
	Observer engine.Observer
	Every    time.Duration
	// SyncBack, when set, is where the files of the run's final workspace
	// (its workdir on the host it ran on) are written once it ends.
	SyncBack string
}

// unsupported refuses, before anything starts, what a plan asks that a
// run on Temporal cannot do, and warns of what it leaves out.
func unsupported(p *plans.Plan, warn func(string)) error {
	for _, a := range p.Agents {
		if len(a.Spawns) > 0 {
			// Checked by agent: a step's tools are its type's to read.
			return fmt.Errorf("agent %s: spawns: (sub-agents its llm steps start with tools: [spawn]) is not supported on Temporal: "+
				"a step runs in an activity, which hands back only the step's own conversation and recordings, not its sub-agents'; "+
				"run this plan without --engine temporal", a.Name)
		}
		if len(a.Approve) > 0 {
			return fmt.Errorf("agent %s: approve: (tool calls that wait for a person) is not supported on Temporal: "+
				"its step runs in an activity, which cannot wait for an answer; run this plan without --engine temporal", a.Name)
		}
	}
	if len(p.Budgets.Limits) > 0 {
		return errors.New(plans.BudgetsOnTemporal)
	}
	for _, st := range p.AllSteps() {
		if st.Type == "llm" && batchOn(p, st) {
			return fmt.Errorf("step %s: batch: true (a for_each's calls as one provider batch, set on the step or its agent) is not supported on Temporal: "+
				"its items run as separate activities, which cannot wait on one batch; run this plan without --engine temporal, or without batch", st.Label)
		}
	}
	if len(p.Notify) > 0 && warn != nil {
		warn("notify: is sent by runs on this machine only: a run on Temporal sends no notification")
	}
	return nil
}

// RunPlan runs r, set up by runs.New as for a run in one process, as a
// workflow on Temporal, waits for its end (a canceled ctx cancels it: the
// run ends as interrupted) and writes its board to r.Board. A mistake in
// the options (a ReuseFiles file that is not a saved run) is a
// runs.UsageError.
func RunPlan(ctx context.Context, c client.Client, store Store, r *runs.Run, o RunOptions) (*Output, error) {
	if err := unsupported(r.Prog.Plan, o.Warn); err != nil {
		return nil, &runs.UsageError{Err: err}
	}
	if err := os.MkdirAll(filepath.Dir(r.Board), board.DirMode); err != nil {
		return nil, err
	}
	reused, err := PutReused(store, o.ReuseFiles)
	if err != nil {
		return nil, &runs.UsageError{Err: err}
	}
	o.Reuse = reused
	if o.SearchAttributesFrom != "" {
		// Set only where the namespace has them: an unknown attribute
		// would fail the start.
		warn := o.Warn
		if warn == nil {
			warn = func(string) {}
		}
		o.Options.SearchAttributes = RegisterSearchAttributes(ctx, c, o.SearchAttributesFrom, warn)
		o.PlanName = r.Prog.Plan.Name
	}
	rem := o.Remote
	rem.Engine, rem.WorkflowID, rem.RunID, rem.Board = "temporal", WorkflowIDOf(r.Record), r.Record.ID, r.Board
	if err := liveboard.WriteRemote(rem); err != nil {
		return nil, err
	}
	we, err := Start(context.Background(), c, store, r.Record, o.StartOptions)
	if runs.IsUsage(err) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("starting the workflow: %w", err)
	}
	if o.Started != nil {
		o.Started(we.GetID())
	}
	res, err := Wait(ctx, c, we, o.Observer, o.Every)
	if err != nil {
		return nil, fmt.Errorf("workflow %s: %w", we.GetID(), err)
	}
	if err := SaveOnce(store, res.Head, r.Board); err != nil {
		return nil, fmt.Errorf("writing %s: %w", r.Board, err)
	}
	if o.SyncBack != "" && res.Workspace != "" {
		if err := SyncBack(store, res.Workspace, o.SyncBack); err != nil {
			return res, fmt.Errorf("--sync-back %s: %w", o.SyncBack, err)
		}
	}
	return res, nil
}

// WorkflowID is the id of the workflow of run runID of the plan named
// plan: runner-<plan>-<run id>, so Temporal's lists and UI say which plan
// a workflow runs. The run id (unique) ends it; the plan's name is made
// of letters, digits, '.', '_' and '-' (any other byte is '-'), at most
// maxIDPlan bytes. No name: runner-<run id>, as runs started before the
// name was in it are.
func WorkflowID(plan, runID string) string {
	var b strings.Builder
	for i := 0; i < len(plan) && b.Len() < maxIDPlan; i++ {
		switch c := plan[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
			b.WriteByte(c)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-.")
	if name == "" {
		return "runner-" + runID
	}
	return "runner-" + name + "-" + runID
}

const maxIDPlan = 48

// WorkflowIDOf is the id of run's workflow: its plan's name (the plan
// source's `name`, else the plan file's name without its extension) and
// its id.
func WorkflowIDOf(run board.Run) string {
	name := ""
	if p, err := plans.Parse(run.PlanPath, []byte(run.PlanSource)); err == nil {
		name = p.Name
	}
	if name == "" {
		base := filepath.Base(run.PlanPath)
		name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	return WorkflowID(name, run.ID)
}

// Wait waits for the run to end, telling obs (when not nil) about steps
// as they start and finish, polled every `every`. A canceled ctx cancels
// the workflow (the run ends as interrupted) and waits for its end.
func Wait(ctx context.Context, c client.Client, we client.WorkflowRun, obs engine.Observer, every time.Duration) (*Output, error) {
	type result struct {
		out *Output
		err error
	}
	done := make(chan result, 1)
	go func() {
		var out Output
		// Get follows continue-as-new to the last part. While the server
		// is away (restarted), ask again: the run goes on without us.
		err := OutputOf(we.Get(context.Background(), &out), &out)
		for deadline := time.Now().Add(10 * time.Minute); err != nil && transient(err) && time.Now().Before(deadline); {
			time.Sleep(time.Second)
			err = OutputOf(c.GetWorkflow(context.Background(), we.GetID(), "").Get(context.Background(), &out), &out)
		}
		done <- result{&out, err}
	}()
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	p := &poller{c: c, id: we.GetID(), obs: obs, started: map[string]bool{}, waiting: map[string]bool{}}
	canceled := false
	for {
		select {
		case r := <-done:
			p.poll(context.Background()) // nothing more runs; the last records
			return r.out, r.err
		case <-ctx.Done():
			if !canceled {
				canceled = true
				if err := c.CancelWorkflow(context.Background(), we.GetID(), ""); err != nil {
					return nil, fmt.Errorf("canceling the run: %w", err)
				}
			}
		case <-t.C:
			if obs != nil {
				p.poll(ctx)
			}
		}
	}
}

type poller struct {
	c       client.Client
	id      string
	obs     engine.Observer
	next    int
	started map[string]bool
	waiting map[string]bool
}

// WaitObserver is told once of each input step that waits for an answer.
type WaitObserver interface {
	Waiting(w board.WaitingInput)
}

func (p *poller) poll(ctx context.Context) {
	if p.obs == nil {
		return
	}
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := p.c.QueryWorkflow(qctx, p.id, "", ProgressName, p.next)
	if err != nil {
		return // a query can fail while the run moves on (continue-as-new); the next poll catches up
	}
	var pr Progress
	if v.Get(&pr) != nil {
		return
	}
	for _, r := range pr.Running {
		k := fmt.Sprintf("%s#%d", r.Label, r.Visit)
		if !p.started[k] {
			p.started[k] = true
			p.obs.StepStarted(r.Label, r.Visit, r.Parent)
		}
	}
	for _, rec := range pr.Steps {
		k := fmt.Sprintf("%s#%d", rec.Label, rec.Visit)
		if !p.started[k] {
			p.obs.StepStarted(rec.Label, rec.Visit, rec.Parent)
		}
		delete(p.started, k)
		p.obs.StepFinished(rec)
	}
	p.next = pr.Next
	if wo, ok := p.obs.(WaitObserver); ok {
		for _, w := range pr.Waiting {
			if k := visitKey(w.Label, w.Visit); !p.waiting[k] {
				p.waiting[k] = true
				wo.Waiting(w)
			}
		}
	}
}

// Save writes the board a chain head stands for as blackboard.json at
// path, exactly as an in-process run leaves it.
func Save(store Store, head, path string) (*board.Board, error) {
	cs, _, err := readChain(store, head, "")
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 || cs[0].Run == nil {
		return nil, errors.New("the run's board chain does not start with the run")
	}
	b, err := board.Create(path, *cs[0].Run, board.Options{})
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		if err := c.apply(b); err != nil {
			b.Close()
			return nil, err
		}
	}
	if err := b.Save(); err != nil {
		b.Close()
		return nil, err
	}
	return b, b.Close()
}

// transient reports whether err is the server being away rather than the
// workflow's own end.
func transient(err error) bool {
	var wf *temporal.WorkflowExecutionError
	return !errors.As(err, &wf)
}

// batchOn reports whether a step's mapping sets batch: true, or, with
// for_each and no batch of its own, its agent's batch: true does.
func batchOn(p *plans.Plan, st *plans.Step) bool {
	n := plans.Resolve(st.Node)
	if n == nil {
		return false
	}
	agent := ""
	for i := 0; i+1 < len(n.Content); i += 2 {
		v := plans.Resolve(n.Content[i+1])
		switch n.Content[i].Value {
		case "batch":
			return v != nil && v.Value == "true"
		case "agent":
			if v != nil {
				agent = v.Value
			}
		}
	}
	a := p.Agent(agent)
	return st.ForEach != nil && a != nil && a.Batch
}

package temporal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/planrunner/runner/internal/engine"
)

// A fan-out spread over the pool. A run whose workspace travels is pinned
// to one host, but the items of a for_each (each a single step that goes
// to a worker) need not run there: items of a fan-out run concurrently
// and must not depend on each other's files, so each can start from the
// workspace as it was when the fan-out started. Each item is then an
// activity on the shared task queue (SpreadName, any worker), handed the
// fan-out's base manifest (or, for a later attempt of the item, the
// manifest its previous attempt left); the worker makes it in a scratch
// directory, runs the step there, and puts the result back as a manifest.
// When the fan-out's visit ends, the workflow merges the items' changes
// (each item's final manifest against the base) onto the run's workspace
// in item order, whatever order they finished in: the file changes of
// item i are applied after those of item i-1, so where two items wrote
// the same path, the later item in item order wins (mergeFanOut). The
// run's host then makes its copy of the merged workspace before the
// run's next step there (a new copy name: hostCopy makes it again).
//
// A for_each whose max_concurrency is 1 stays on the run's host: its
// items run in turn, each on the files the one before it left.
// Options.KeepFanOuts keeps a run's items on its host; a run whose
// workspace is shared (--shared-workspace) never spreads: every worker
// already sees the same files.

// SpreadName is the activity of a spread fan-out's item.
const SpreadName = "runner.spread-step"

// spreadFanOuts versions the change: histories recorded before it ran
// every item on the run's host.
const spreadFanOuts = "spread-fan-outs"

// inTurnFanOutsStay versions keeping a for_each whose max_concurrency is
// 1 on the run's host: histories recorded before it spread its items.
const inTurnFanOutsStay = "in-turn-fan-outs-stay"

// FanOut is a spread fan-out under way (or ended, its changes not yet
// merged): the for_each's label, the workspace its items start from and
// each item's latest manifest by index.
type FanOut struct {
	Label string
	Base  string
	Items map[int]string `json:",omitempty"`

	ready bool // Base is set: the items may start
}

// spreadOf is the open fan-out a step's activity belongs to when it is
// spread: a leaf item of a for_each of a pinned run that does not share
// its workspace. nil: the step runs on the run's host.
func (it *interp) spreadOf(ctx workflow.Context, n *engine.Node) (*FanOut, error) {
	if _, _, ok := n.ItemOf(); !ok || it.opt.KeepFanOuts || !it.pinned(ctx) {
		return nil, nil
	}
	if workflow.GetVersion(ctx, spreadFanOuts, workflow.DefaultVersion, 1) < 1 {
		return nil, nil
	}
	if n.Step.MaxConcurrency == 1 &&
		workflow.GetVersion(ctx, inTurnFanOutsStay, workflow.DefaultVersion, 1) >= 1 {
		// Items one at a time: in one process each sees the files the
		// items before it left, which a spread item, started from the
		// fan-out's base, would not.
		return nil, nil
	}
	// Pinned first, as any step of the run would be: a worker that shares
	// the workspace says so here.
	if err := it.ensurePinned(ctx); err != nil {
		return nil, err
	}
	if it.shared {
		return nil, nil
	}
	each := engine.BaseLabel(n.Label)
	fo := it.fanouts[each]
	if fo == nil {
		fo = &FanOut{Label: each, Items: map[int]string{}}
		if it.fanouts == nil {
			it.fanouts = map[string]*FanOut{}
		}
		it.fanouts[each] = fo
		// Fan-outs that ended before this one started are in its base.
		if err := it.settle(ctx); err != nil {
			return nil, err
		}
		fo.Base, fo.ready = it.ws, true
	}
	if !fo.ready {
		if err := workflow.Await(ctx, func() bool { return fo.ready }); err != nil {
			return nil, err
		}
	}
	return fo, nil
}

// fanOutEnded moves a spread fan-out whose visit was recorded to those
// whose changes are merged before the run's workspace is next used. A
// for_each stopped between items for the next part is not recorded: it
// stays open, and the next part runs its other items from the same base.
func (it *interp) fanOutEnded(label string) {
	fo := it.fanouts[label]
	if fo == nil {
		return
	}
	delete(it.fanouts, label)
	it.toMerge = append(it.toMerge, fo)
}

// endFanOuts ends every open fan-out, in label order (the run ends: a
// visit that never got its record still leaves its items' files, as in
// one process).
func (it *interp) endFanOuts() {
	labels := make([]string, 0, len(it.fanouts))
	for l := range it.fanouts {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, l := range labels {
		it.fanOutEnded(l)
	}
}

// settle merges the changes of the fan-outs that ended onto the run's
// workspace, in the order they ended.
func (it *interp) settle(ctx workflow.Context) error {
	for it.settling {
		if err := workflow.Await(ctx, func() bool { return !it.settling }); err != nil {
			return err
		}
	}
	if len(it.toMerge) == 0 {
		return nil
	}
	it.settling = true
	defer func() { it.settling = false }()
	ctx, _ = workflow.NewDisconnectedContext(ctx) // an interrupted run still keeps its items' files
	for len(it.toMerge) > 0 {
		fo := it.toMerge[0]
		in := MergeInput{Run: it.ws, Base: fo.Base}
		idx := make([]int, 0, len(fo.Items))
		for i := range fo.Items {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		for _, i := range idx {
			in.Items = append(in.Items, fo.Items[i])
		}
		var merged string
		lctx := workflow.WithLocalActivityOptions(ctx, storeOptions)
		if err := workflow.ExecuteLocalActivity(lctx, it.io.acts.MergeFanOut, in).Get(lctx, &merged); err != nil {
			return fmt.Errorf("merging the items of %s into the run's workspace: %w", fo.Label, err)
		}
		it.toMerge = it.toMerge[1:]
		if merged == it.ws {
			continue // the items changed no file
		}
		it.ws = merged
		it.merges++
		if it.copy != "" {
			// The host makes its copy again from the merged workspace.
			it.copy = fmt.Sprintf("merged-%s-%d", workflow.GetInfo(ctx).WorkflowExecution.RunID, it.merges)
			it.wsSeq = 0
		}
	}
	return nil
}

// MergeInput is a fan-out's merge: the run's workspace now, the one its
// items started from, and each item's final one, in item order.
type MergeInput struct {
	Run, Base string
	Items     []string
}

// MergeFanOut applies each item's changes against the base (files added,
// changed or removed) onto the run's workspace, in item order, and puts
// the result in the store.
func (s storeActs) MergeFanOut(_ context.Context, in MergeInput) (string, error) {
	return mergeFanOut(s.store, in)
}

func mergeFanOut(store Store, in MergeInput) (string, error) {
	run, err := LoadManifest(store, in.Run)
	if err != nil {
		return "", err
	}
	base, err := LoadManifest(store, in.Base)
	if err != nil {
		return "", err
	}
	files := byPath(run.Files)
	was := byPath(base.Files)
	for _, name := range in.Items {
		item, err := LoadManifest(store, name)
		if err != nil {
			return "", err
		}
		now := byPath(item.Files)
		for p, f := range now {
			if b, ok := was[p]; !ok || b != f {
				files[p] = f
			}
		}
		for p := range was {
			if _, ok := now[p]; !ok {
				delete(files, p)
			}
		}
	}
	out := Manifest{Workdir: run.Workdir, PlanDir: run.PlanDir, Plan: run.Plan}
	for _, f := range files {
		out.Files = append(out.Files, f)
	}
	// putManifest sorts: the same files give the same name, so a
	// fan-out that changed nothing leaves the run's workspace as it was.
	return putManifest(store, out)
}

func byPath(fs []WorkspaceFile) map[string]WorkspaceFile {
	m := make(map[string]WorkspaceFile, len(fs))
	for _, f := range fs {
		m[f.Path] = f
	}
	return m
}

// SpreadStep runs one attempt of a spread fan-out's item (in.Workspace:
// the manifest it starts from) in a scratch copy of that workspace on
// this worker, and returns with the manifest it left.
func (a *Activities) SpreadStep(ctx context.Context, in StepInput) (*StepOutput, error) {
	if in.Workspace == "" {
		return nil, temporal.NewNonRetryableApplicationError("a spread step needs its workspace", errBadInput, nil)
	}
	return a.runStep(ctx, in, true)
}

// scratch makes the workspace of manifest name in a directory of its own
// under the work root, for one spread step; done removes it.
func (a *Activities) scratch(runID, name string) (root string, m *Manifest, done func(), err error) {
	workRoot := a.WorkRoot
	if workRoot == "" {
		workRoot = DefaultWorkRoot()
	}
	fail := func(err error) (string, *Manifest, func(), error) {
		err = fmt.Errorf("host %s: a scratch workspace of run %s: %w", a.hostName(), runID, err)
		return "", nil, nil, temporal.NewNonRetryableApplicationError(err.Error(), errBadInput, err)
	}
	if m, err = LoadManifest(a.Store, name); err != nil {
		return fail(err)
	}
	root = filepath.Join(workRoot, ".spread", safeName(runID)+"-"+randHex())
	if err := materialize(a.Store, m, root); err != nil {
		return fail(err)
	}
	return root, m, func() { os.RemoveAll(root) }, nil
}

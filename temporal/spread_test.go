package temporal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
)

// The merge applies each item's changes against the base onto the run's
// workspace in item order: the later item wins a path both wrote, a file
// an item removed is gone, and what the run's host changed meanwhile and
// no item touched stays.
func TestMergeFanOut(t *testing.T) {
	store := DirStore{Dir: t.TempDir()}
	put := func(files map[string]string) string {
		m := Manifest{Workdir: wsWork, PlanDir: wsPlan, Plan: "plan.yaml"}
		for p, body := range files {
			blob, err := store.Put([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			m.Files = append(m.Files, WorkspaceFile{Path: wsWork + "/" + p, Mode: 0o644, Blob: blob})
		}
		name, err := putManifest(store, m)
		if err != nil {
			t.Fatal(err)
		}
		return name
	}
	base := map[string]string{"a": "base", "b": "base", "c": "base"}
	with := func(ch map[string]string, gone ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range ch {
			out[k] = v
		}
		for _, g := range gone {
			delete(out, g)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		run   map[string]string
		items []map[string]string
		want  string
	}{
		{"no item changed anything", base, []map[string]string{base, base}, "a=base b=base c=base"},
		{"each its own file", base, []map[string]string{with(map[string]string{"x0": "0"}), with(map[string]string{"x1": "1"})},
			"a=base b=base c=base x0=0 x1=1"},
		{"the later item wins", base, []map[string]string{with(map[string]string{"a": "0"}), with(map[string]string{"a": "1"}), base},
			"a=1 b=base c=base"},
		{"a removal, then a write of the same path", base, []map[string]string{with(nil, "a"), with(map[string]string{"a": "1"})},
			"a=1 b=base c=base"},
		{"a write, then a removal of the same path", base, []map[string]string{with(map[string]string{"a": "0"}), with(nil, "a")},
			"b=base c=base"},
		{"the host's change meanwhile stays", with(map[string]string{"c": "host"}), []map[string]string{with(map[string]string{"b": "0"})},
			"a=base b=0 c=host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := MergeInput{Run: put(tc.run), Base: put(base)}
			for _, it := range tc.items {
				in.Items = append(in.Items, put(it))
			}
			merged, err := mergeFanOut(store, in)
			if err != nil {
				t.Fatal(err)
			}
			m, err := LoadManifest(store, merged)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range m.Files {
				data, err := store.Get(f.Blob)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, strings.TrimPrefix(f.Path, wsWork+"/")+"="+string(data))
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("merged %s; want %s", g, tc.want)
			}
			if tc.name == "no item changed anything" && merged != in.Run {
				t.Errorf("merged %s; want the run's own workspace %s", merged, in.Run)
			}
		})
	}
}

// spreadPlan's items write a file each, the same file all, and remove
// one the plan's directory had; the step after them runs on the run's
// host and reads what they left.
const spreadPlan = `
version: 1
name: spread
steps:
  - {label: each, type: command, for_each: '0..2', max_concurrency: %d, run: "echo ${{ item }} > f${{ item }}.txt; echo ${{ item }} > same.txt; rm -f gone.txt"}
  - {label: read, type: command, run: "cat f0.txt f1.txt f2.txt same.txt; test -e gone.txt && echo here || echo gone"}
`

// A for_each of a pinned run spreads its items over the pool and merges
// their files in item order, whatever order they finish in: the step
// after it sees every item's file, the last item's same.txt, and no
// gone.txt; the records are those of a run whose items ran one after
// another on its host.
func TestSpreadFanOut(t *testing.T) {
	run := func(t *testing.T, opt Options, src string, order []int) (*Output, string, DirStore, []string) {
		store := DirStore{Dir: t.TempDir()}
		checkout := t.TempDir()
		plan := writePlan(t, checkout, src)
		if err := os.WriteFile(filepath.Join(checkout, "gone.txt"), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		ws, err := PackWorkspace(store, plan, checkout)
		if err != nil {
			t.Fatal(err)
		}
		host := &Activities{Store: store, HostID: "h1", WorkRoot: t.TempDir()}
		pool := []*Activities{
			{Store: store, HostID: "p1", WorkRoot: t.TempDir()},
			{Store: store, HostID: "p2", WorkRoot: t.TempDir()},
			{Store: store, HostID: "p3", WorkRoot: t.TempDir()},
		}
		var mu sync.Mutex
		var onHost []string
		done := map[int]chan struct{}{}
		for i := range 3 {
			done[i] = make(chan struct{})
		}
		var s testsuite.WorkflowTestSuite
		s.SetLogger(quietLogger())
		env := s.NewTestWorkflowEnvironment()
		env.SetWorkerOptions(workerOptions)
		env.SetTestTimeout(2 * time.Minute)
		Register(env, &Workflow{Store: store}, nil)
		env.RegisterActivityWithOptions(func(ctx context.Context, in StepInput) (*StepOutput, error) {
			mu.Lock()
			onHost = append(onHost, in.Label)
			mu.Unlock()
			return host.RunStep(ctx, in)
		}, activity.RegisterOptions{Name: ActivityName})
		env.RegisterActivityWithOptions(host.Pin, activity.RegisterOptions{Name: PinName})
		env.RegisterActivityWithOptions(host.ReadWorkspace, activity.RegisterOptions{Name: WorkspaceReadName})
		env.RegisterActivityWithOptions(func(ctx context.Context, in StepInput) (*StepOutput, error) {
			var i int
			fmt.Sscanf(in.Label, "each[%d]", &i)
			// Items finish in the order given: each waits for the one
			// before it in that order to have finished.
			if k := indexOf(intsToStrings(order), fmt.Sprint(i)); k > 0 {
				select {
				case <-done[order[k-1]]:
				case <-time.After(time.Minute):
					return nil, fmt.Errorf("item %d: its turn never came", i)
				}
			}
			defer close(done[i])
			return pool[i%len(pool)].SpreadStep(ctx, in)
		}, activity.RegisterOptions{Name: SpreadName})
		r := newRun(t, src, checkout)
		r.PlanPath = plan
		env.ExecuteWorkflow(WorkflowName, Input{Run: r, Workspace: ws, Options: opt})
		var out Output
		if err := envOutput(env, &out); err != nil {
			t.Fatalf("workflow: %v", err)
		}
		b, err := LoadBoard(store, out.Head)
		if err != nil {
			t.Fatal(err)
		}
		var views []string
		for _, s := range b.Steps() {
			views = append(views, stepView(s, b.Run().Workdir))
		}
		sort.Strings(views)
		return &out, strings.Join(onHost, " "), store, views
	}
	_, _, _, want := run(t, Options{KeepFanOuts: true}, fmt.Sprintf(spreadPlan, 1), []int{0, 1, 2})
	for _, tc := range []struct {
		name  string
		order []int
	}{
		{"in item order", []int{0, 1, 2}},
		{"reversed", []int{2, 1, 0}},
		{"the first last", []int{1, 2, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, onHost, store, got := run(t, Options{}, fmt.Sprintf(spreadPlan, 3), tc.order)
			if out.Status != "succeeded" {
				t.Fatalf("status %s: %s", out.Status, out.Error)
			}
			if onHost != "read" {
				t.Errorf("steps on the run's host: %q; want only read", onHost)
			}
			if d := firstDiff(want, got); d != "" {
				t.Errorf("records differ from a run whose items ran in turn on its host: %s", d)
			}
			back := t.TempDir()
			if err := SyncBack(store, out.Workspace, back); err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string]string{"f0.txt": "0\n", "f1.txt": "1\n", "f2.txt": "2\n", "same.txt": "2\n"} {
				if data, err := os.ReadFile(filepath.Join(back, name)); err != nil || string(data) != want {
					t.Errorf("--sync-back %s = %q, %v; want %q", name, data, err, want)
				}
			}
			if _, err := os.Stat(filepath.Join(back, "gone.txt")); err == nil {
				t.Errorf("--sync-back wrote gone.txt, which the items removed")
			}
		})
	}
}

// inTurnPlan's items run one at a time, each appending to a file the
// one before it appended to.
const inTurnPlan = `
version: 1
name: in-turn
steps:
  - {label: each, type: command, for_each: '0..2', max_concurrency: 1, run: "echo ${{ item }} >> log.txt; tr '\\n' ' ' < log.txt"}
`

// A for_each whose items run one at a time stays on the run's host: each
// item sees the files of the items before it, as in one process.
func TestInTurnFanOutStaysOnHost(t *testing.T) {
	store := DirStore{Dir: t.TempDir()}
	checkout := t.TempDir()
	plan := writePlan(t, checkout, inTurnPlan)
	ws, err := PackWorkspace(store, plan, checkout)
	if err != nil {
		t.Fatal(err)
	}
	host := &Activities{Store: store, HostID: "h1", WorkRoot: t.TempDir()}
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(workerOptions)
	env.SetTestTimeout(2 * time.Minute)
	Register(env, &Workflow{Store: store}, nil)
	var onHost, spread []string
	env.RegisterActivityWithOptions(func(ctx context.Context, in StepInput) (*StepOutput, error) {
		onHost = append(onHost, in.Label)
		return host.RunStep(ctx, in)
	}, activity.RegisterOptions{Name: ActivityName})
	env.RegisterActivityWithOptions(host.Pin, activity.RegisterOptions{Name: PinName})
	env.RegisterActivityWithOptions(host.ReadWorkspace, activity.RegisterOptions{Name: WorkspaceReadName})
	env.RegisterActivityWithOptions(func(ctx context.Context, in StepInput) (*StepOutput, error) {
		spread = append(spread, in.Label)
		return host.SpreadStep(ctx, in)
	}, activity.RegisterOptions{Name: SpreadName})
	r := newRun(t, inTurnPlan, checkout)
	r.PlanPath = plan
	env.ExecuteWorkflow(WorkflowName, Input{Run: r, Workspace: ws})
	var out Output
	if err := envOutput(env, &out); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	if len(spread) != 0 || strings.Join(onHost, " ") != "each[0] each[1] each[2]" {
		t.Errorf("items on the host %v, spread %v; want every item on the host", onHost, spread)
	}
	b, err := LoadBoard(store, out.Head)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(stepOf(t, b, "each[2]").Result); !strings.Contains(got, `"stdout":"0 1 2 "`) {
		t.Errorf("each[2]: %s; want the log of all three items", got)
	}
}

func intsToStrings(xs []int) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprint(x)
	}
	return out
}

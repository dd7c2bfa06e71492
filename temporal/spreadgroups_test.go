package temporal

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/planrunner/runner/internal/board"
)

// spreadRun is a pinned run of a plan on the test suite: the run's host
// h1 takes the steps that stay on it, a pool of three the spread ones.
type spreadRun struct {
	out            Output
	b              *board.Board
	files          map[string]string // the run's final workspace (--sync-back), by name
	onHost, spread []string          // the labels of the steps each ran, sorted
}

// runSpread runs src pinned; the spread steps named in finish finish in
// that order (each waits for the one before it to have finished).
func runSpread(t *testing.T, src string, finish ...string) spreadRun {
	t.Helper()
	store := DirStore{Dir: t.TempDir()}
	checkout := t.TempDir()
	plan := writePlan(t, checkout, src)
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
	var r spreadRun
	done := map[string]chan struct{}{}
	for _, l := range finish {
		done[l] = make(chan struct{})
	}
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(workerOptions)
	env.SetTestTimeout(2 * time.Minute)
	Register(env, &Workflow{Store: store}, nil)
	env.RegisterActivityWithOptions(func(ctx context.Context, in StepInput) (*StepOutput, error) {
		mu.Lock()
		r.onHost = append(r.onHost, in.Label)
		mu.Unlock()
		return host.RunStep(ctx, in)
	}, activity.RegisterOptions{Name: ActivityName})
	env.RegisterActivityWithOptions(host.Pin, activity.RegisterOptions{Name: PinName})
	env.RegisterActivityWithOptions(host.ReadWorkspace, activity.RegisterOptions{Name: WorkspaceReadName})
	env.RegisterActivityWithOptions(func(ctx context.Context, in StepInput) (*StepOutput, error) {
		mu.Lock()
		k := len(r.spread)
		r.spread = append(r.spread, in.Label)
		mu.Unlock()
		if i := slices.Index(finish, in.Label); i >= 0 {
			defer close(done[in.Label])
			if i > 0 {
				select {
				case <-done[finish[i-1]]:
				case <-time.After(time.Minute):
					t.Errorf("%s: %s never finished", in.Label, finish[i-1])
				}
			}
		}
		return pool[k%len(pool)].SpreadStep(ctx, in)
	}, activity.RegisterOptions{Name: SpreadName})
	run := newRun(t, src, checkout)
	run.PlanPath = plan
	env.ExecuteWorkflow(WorkflowName, Input{Run: run, Workspace: ws})
	if err := envOutput(env, &r.out); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	if r.b, err = LoadBoard(store, r.out.Head); err != nil {
		t.Fatal(err)
	}
	back := t.TempDir()
	if err := SyncBack(store, r.out.Workspace, back); err != nil {
		t.Fatal(err)
	}
	r.files = map[string]string{}
	err = filepath.WalkDir(back, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "plan.yaml" {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(back, p)
		r.files[rel] = strings.TrimSpace(string(data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(r.onHost)
	slices.Sort(r.spread)
	return r
}

// A parallel group's single-step children and a block for_each's items
// (every step inside an item, as one unit) spread over the pool; the
// step after the fan-out sees every child's and item's files, merged in
// plan or item order whatever order they finished in. What would see its
// siblings' files in one process stays on the run's host.
func TestSpreadGroupsAndBlocks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		src    string
		finish []string // the order the spread steps named here finish in
		onHost string   // the labels run on the run's host, sorted
		spread string   // and those spread over the pool
		files  string   // the final workspace, name=content sorted; "" to leave unchecked
		status string
		// inProcess: the board equals the same plan's in process (false
		// where one process leaves a race: two children write one file)
		inProcess bool
	}{
		{name: "a group's children, each its own file", src: `
version: 1
steps:
  - {label: seed, type: command, run: "echo old > gone.txt; echo base > base.txt"}
  - label: grp
    parallel:
      - {label: a, type: command, run: "echo a-$(cat base.txt) > a.txt"}
      - {label: b, type: command, run: "rm gone.txt; echo b > b.txt"}
      - {label: c, type: board, op: write, key: k, value: v}
  - {label: read, type: command, run: "cat a.txt b.txt; test -e gone.txt && echo kept || echo removed"}
`, finish: []string{"b", "a"}, onHost: "read seed", spread: "a b",
			files: "a.txt=a-base b.txt=b base.txt=base", status: "succeeded", inProcess: true},
		{name: "a group's children write one file: plan order wins", src: `
version: 1
steps:
  - label: grp
    parallel:
      - {label: a, type: command, run: "echo a > same.txt"}
      - {label: b, type: command, run: "echo b > same.txt"}
      - {label: c, type: command, run: "echo c > same.txt"}
  - {label: read, type: command, run: "cat same.txt"}
`, finish: []string{"c", "b", "a"}, onHost: "read", spread: "a b c", files: "same.txt=c", status: "succeeded"},
		{name: "a group's child fails: its files stay", src: `
version: 1
steps:
  - label: grp
    continue_on_error: true
    fail_fast: false
    parallel:
      - {label: a, type: command, run: "echo a > a.txt"}
      - {label: bad, type: command, run: "echo half > half.txt; exit 3"}
  - {label: read, type: command, run: "cat a.txt half.txt"}
`, onHost: "read", spread: "a bad", files: "a.txt=a half.txt=half", status: "succeeded", inProcess: true},
		{name: "a group whose children need each other stays", src: `
version: 1
steps:
  - label: grp
    parallel:
      - {label: a, type: command, run: "echo a > a.txt"}
      - {label: b, type: command, needs: [a], run: "cat a.txt"}
`, onHost: "a b", files: "a.txt=a", status: "succeeded", inProcess: true},
		{name: "a group one child at a time stays", src: `
version: 1
steps:
  - label: grp
    max_concurrency: 1
    parallel:
      - {label: a, type: command, run: "echo a >> log.txt"}
      - {label: b, type: command, run: "echo b >> log.txt; cat log.txt"}
`, onHost: "a b", files: "log.txt=a\nb", status: "succeeded", inProcess: true},
		{name: "a sequence per item sees its own earlier step", src: `
version: 1
steps:
  - label: outer
    parallel:
      - label: each
        for_each: '0..2'
        steps:
          - {label: w, type: command, run: "echo ${{ item }} > own${{ item }}.txt; echo ${{ item }} > same.txt"}
          - {label: r, type: command, run: "cat own${{ item }}.txt; echo ${{ item }}r > same.txt"}
  - {label: read, type: command, run: "cat own0.txt own1.txt own2.txt same.txt"}
`, finish: []string{"each[2]/r", "each[1]/r", "each[0]/r"}, onHost: "read",
			spread: "each[0]/r each[0]/w each[1]/r each[1]/w each[2]/r each[2]/w",
			files:  "own0.txt=0 own1.txt=1 own2.txt=2 same.txt=2r", status: "succeeded"},
		{name: "a group per item: its steps' files merged into the item", src: `
version: 1
steps:
  - label: each
    for_each: '0..1'
    parallel:
      - {label: x, type: command, run: "echo x > x${{ item }}.txt"}
      - {label: y, type: command, run: "echo y > y${{ item }}.txt"}
  - {label: read, type: command, run: "cat x0.txt y0.txt x1.txt y1.txt"}
`, finish: []string{"each[0]/x", "each[0]/y"}, onHost: "read",
			spread: "each[0]/x each[0]/y each[1]/x each[1]/y",
			files:  "x0.txt=x x1.txt=x y0.txt=y y1.txt=y", status: "succeeded", inProcess: true},
		{name: "an item's step fails: the item's earlier files stay", src: `
version: 1
steps:
  - label: outer
    parallel:
      - label: each
        for_each: '0..1'
        continue_on_error: true
        fail_fast: false
        steps:
          - {label: w, type: command, run: "echo ${{ item }} > w${{ item }}.txt"}
          - {label: check, type: command, run: "test ${{ item }} = 0"}
  - {label: read, type: command, run: "cat w0.txt w1.txt"}
`, onHost: "read", spread: "each[0]/check each[0]/w each[1]/check each[1]/w",
			files: "w0.txt=0 w1.txt=1", status: "succeeded", inProcess: true},
		{name: "a block for_each one item at a time stays", src: `
version: 1
steps:
  - label: outer
    parallel:
      - label: each
        for_each: '0..1'
        max_concurrency: 1
        steps:
          - {label: w, type: command, run: "echo ${{ item }} >> log.txt; cat log.txt"}
`, onHost: "each[0]/w each[1]/w", files: "log.txt=0\n1", status: "succeeded", inProcess: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runSpread(t, tc.src, tc.finish...)
			if r.out.Status != tc.status {
				t.Fatalf("status %s (%s); want %s", r.out.Status, r.out.Error, tc.status)
			}
			if got := strings.Join(r.onHost, " "); got != tc.onHost {
				t.Errorf("on the run's host: %q; want %q", got, tc.onHost)
			}
			if got := strings.Join(r.spread, " "); got != tc.spread {
				t.Errorf("spread: %q; want %q", got, tc.spread)
			}
			var files []string
			for name, body := range r.files {
				files = append(files, name+"="+body)
			}
			slices.Sort(files)
			if got := strings.Join(files, " "); tc.files != "" && got != tc.files {
				t.Errorf("the run's workspace: %q; want %q", got, tc.files)
			}
			if !tc.inProcess {
				return
			}
			want, _ := inProcess(t, tc.src)
			if d := sameCross(want, r.b); d != "" {
				t.Errorf("vs in process: %s", d)
			}
		})
	}
}

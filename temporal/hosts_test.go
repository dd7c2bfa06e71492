package temporal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// fanOutPlan writes one file an item, then reads them all: a read that
// starts from a workspace missing an item's file fails (cat), and its
// output lists what it found.
const fanOutPlan = `
version: 1
name: fan
steps:
  - {label: each, type: command, for_each: '0..2', max_concurrency: 3, run: "echo ${{ item }} > f${{ item }}.txt"}
  - {label: read, type: command, run: "cat f0.txt f1.txt f2.txt"}
`

// hostPair runs a pinned run's activities on two hosts of one store, each
// with a work root of its own (two disks), as the test environment has one
// worker: the run goes to h1 until a pin after the first lands on h2.
type hostPair struct {
	mu    sync.Mutex
	hosts []*Activities
	on    int // the host pinned last
	pins  int
	// lose, when it returns true for a step's input, loses that attempt
	// with its host: the step's retry waited past the host timeout.
	lose func(StepInput) bool
	// hold, when set, runs around each step: before (the step waits for
	// its turn on the host) and after (its completion waits before the
	// workflow sees it).
	before, after func(label string)
}

func (h *hostPair) host() *Activities {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hosts[h.on]
}

func (h *hostPair) pin(ctx context.Context, in PinInput) (*PinOutput, error) {
	h.mu.Lock()
	h.pins++
	h.on = min(h.pins-1, len(h.hosts)-1)
	a := h.hosts[h.on]
	h.mu.Unlock()
	return a.Pin(ctx, in)
}

func (h *hostPair) runStep(ctx context.Context, in StepInput) (*StepOutput, error) {
	if h.lose != nil && h.lose(in) {
		return nil, temporal.NewTimeoutError(enums.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
	}
	if h.before != nil {
		h.before(in.Label)
	}
	out, err := h.host().RunStep(ctx, in)
	if h.after != nil {
		h.after(in.Label)
	}
	return out, err
}

func (h *hostPair) read(ctx context.Context, in WorkspaceRead) ([]byte, error) {
	out, err := h.host().ReadWorkspace(ctx, in)
	return out, err
}

// A step moved to another host starts from a workspace holding every
// step that finished before it, whatever order the workflow saw them
// finish in: the items of a for_each finish on their host in one order
// (each writes its file, then the host puts the workspace in the store)
// and reach the workflow in another; the step after them loses its host
// and runs on the next, which makes the workspace from what the workflow
// hands it. It reads every item's file.
func TestMovedStepSeesEveryFinishedItem(t *testing.T) {
	for _, tc := range []struct {
		name string
		seen []string // the order the workflow sees the items finish in
	}{
		{"as they finished", []string{"each[0]", "each[1]", "each[2]"}},
		{"the last seen finished first", []string{"each[1]", "each[2]", "each[0]"}},
		{"reversed", []string{"each[2]", "each[1]", "each[0]"}},
		{"the first seen finished last", []string{"each[2]", "each[0]", "each[1]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := DirStore{Dir: t.TempDir()}
			checkout := t.TempDir()
			plan := writePlan(t, checkout, fanOutPlan)
			ws, err := PackWorkspace(store, plan, checkout)
			if err != nil {
				t.Fatal(err)
			}
			h := &hostPair{hosts: []*Activities{
				{Store: store, HostID: "h1", WorkRoot: t.TempDir()},
				{Store: store, HostID: "h2", WorkRoot: t.TempDir()},
			}}
			// Items finish on h1 in label order: each waits for the one
			// before it to have put the workspace back.
			finished := map[string]chan struct{}{}
			seen := map[string]chan struct{}{}
			for i := range 3 {
				finished[fmt.Sprintf("each[%d]", i)] = make(chan struct{})
				seen[fmt.Sprintf("each[%d]", i)] = make(chan struct{})
			}
			wait := func(ch chan struct{}) {
				select {
				case <-ch:
				case <-time.After(time.Minute):
					t.Error("an item waited a minute for its turn")
				}
			}
			h.before = func(label string) {
				var i int
				if _, err := fmt.Sscanf(label, "each[%d]", &i); err == nil && i > 0 {
					wait(finished[fmt.Sprintf("each[%d]", i-1)])
				}
			}
			h.after = func(label string) {
				ch := finished[label]
				if ch == nil {
					return
				}
				close(ch)
				// Its completion reaches the workflow after the one seen
				// before it.
				if k := indexOf(tc.seen, label); k > 0 {
					wait(seen[tc.seen[k-1]])
				}
			}
			lost := false
			h.lose = func(in StepInput) bool {
				if in.Label == "read" && !lost {
					lost = true
					return true
				}
				return false
			}

			var s testsuite.WorkflowTestSuite
			s.SetLogger(quietLogger())
			env := s.NewTestWorkflowEnvironment()
			env.SetWorkerOptions(workerOptions)
			env.SetTestTimeout(2 * time.Minute)
			Register(env, &Workflow{Store: store}, nil)
			env.RegisterActivityWithOptions(h.runStep, activity.RegisterOptions{Name: ActivityName})
			env.RegisterActivityWithOptions(h.pin, activity.RegisterOptions{Name: PinName})
			env.RegisterActivityWithOptions(h.read, activity.RegisterOptions{Name: WorkspaceReadName})
			env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
				label, _, _ := strings.Cut(info.ActivityID, "#")
				if ch := seen[label]; ch != nil {
					close(ch)
				}
			})
			run := newRun(t, fanOutPlan, checkout)
			run.PlanPath = plan
			env.ExecuteWorkflow(WorkflowName, Input{Run: run, Workspace: ws, Options: Options{KeepFanOuts: true}})
			var out Output
			if err := envOutput(env, &out); err != nil {
				t.Fatalf("workflow: %v", err)
			}
			b, err := LoadBoard(store, out.Head)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Hosts) != 2 || out.Hosts[1].Host != "h2" {
				t.Fatalf("hosts %+v; want the run moved from h1 to h2", out.Hosts)
			}
			if got := runSummary(b); out.Status != "succeeded" || !strings.HasSuffix(got, "read:succeeded") {
				t.Fatalf("status %s (%s), steps %s; want the read on h2 to find every item's file", out.Status, out.Error, got)
			}
			if s := stepOf(t, b, "read"); !strings.Contains(string(s.Result), `"0\n1\n2\n"`) {
				t.Errorf("read on h2: %s; want every item's file", s.Result)
			}
			// The run's final workspace holds them too (--sync-back).
			back := t.TempDir()
			if err := SyncBack(store, out.Workspace, back); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if data, err := os.ReadFile(filepath.Join(back, fmt.Sprintf("f%d.txt", i))); err != nil || string(data) != fmt.Sprintf("%d\n", i) {
					t.Errorf("--sync-back f%d.txt = %q, %v", i, data, err)
				}
			}
		})
	}
}

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}

// A host taken for lost while steps of the run still run there: the run
// moves on in a copy made from the newest snapshot, so a step whose
// completion comes from the copy it left runs again in the new one (its
// file is not there), and a pin under way when a newer snapshot of the
// old copy arrives is made again from it. Every item's file is read.
func TestStepsOfALeftCopy(t *testing.T) {
	for _, tc := range []struct {
		name string
		// held is the activity held until released is seen to complete.
		held, released string
		pins           int // pin activities the run ends with
		attempts       map[string]int
	}{
		{"an item completes after the move", "each[0]#1", "pin#2", 2, map[string]int{"each[0]": 2, "each[1]": 1, "each[2]": 1}},
		{"an item completes during the pin", "pin#2", "each[0]#1", 3, map[string]int{"each[0]": 1, "each[1]": 1, "each[2]": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := DirStore{Dir: t.TempDir()}
			checkout := t.TempDir()
			plan := writePlan(t, checkout, fanOutPlan)
			ws, err := PackWorkspace(store, plan, checkout)
			if err != nil {
				t.Fatal(err)
			}
			h := &hostPair{hosts: []*Activities{
				{Store: store, HostID: "h1", WorkRoot: t.TempDir()},
				{Store: store, HostID: "h2", WorkRoot: t.TempDir()},
			}}
			// each[1] finds its host gone once each[0] runs and each[2]
			// has finished there.
			started, done2 := make(chan struct{}), make(chan struct{})
			released := make(chan struct{})
			lost := false
			h.lose = func(in StepInput) bool {
				if in.Label == "each[1]" && !lost {
					<-started
					<-done2
					lost = true
					return true
				}
				return false
			}
			h.before = func(label string) {
				if label == "each[0]" && !lost {
					// each[0] writes its file after each[2] put the
					// workspace back: no snapshot before the move holds it.
					close(started)
					<-done2
				}
			}
			hold := func(id string) {
				if id == tc.held {
					select {
					case <-released:
					case <-time.After(time.Minute):
						t.Errorf("%s held a minute", id)
					}
				}
			}
			pinStarted := make(chan struct{})
			h.after = func(label string) {
				if label == "each[0]" {
					<-pinStarted // each[0] finishes once the run is moving
				}
				hold(label + "#1")
			}
			pin := h.pin
			pins := 0
			h2pin := func(ctx context.Context, in PinInput) (*PinOutput, error) {
				out, err := pin(ctx, in)
				pins++
				if id := fmt.Sprintf("pin#%d", pins); id == tc.held {
					hold(id)
					// The workflow takes each[0]'s snapshot before the
					// pin's answer (in one task, the two would race: the
					// item would run again instead, as in the other case).
					time.Sleep(100 * time.Millisecond)
				}
				return out, err
			}
			var s testsuite.WorkflowTestSuite
			s.SetLogger(quietLogger())
			env := s.NewTestWorkflowEnvironment()
			env.SetWorkerOptions(workerOptions)
			env.SetTestTimeout(2 * time.Minute)
			Register(env, &Workflow{Store: store}, nil)
			env.RegisterActivityWithOptions(h.runStep, activity.RegisterOptions{Name: ActivityName})
			env.RegisterActivityWithOptions(h2pin, activity.RegisterOptions{Name: PinName})
			env.RegisterActivityWithOptions(h.read, activity.RegisterOptions{Name: WorkspaceReadName})
			once, once2 := sync.Once{}, sync.Once{}
			env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
				if info.ActivityID == "pin#2" {
					once2.Do(func() { close(pinStarted) })
				}
			})
			env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
				if info.ActivityID == tc.released {
					once.Do(func() { close(released) })
				}
				if info.ActivityID == "each[2]#1" {
					close(done2)
				}
			})
			run := newRun(t, fanOutPlan, checkout)
			run.PlanPath = plan
			env.ExecuteWorkflow(WorkflowName, Input{Run: run, Workspace: ws, Options: Options{KeepFanOuts: true}})
			var out Output
			if err := envOutput(env, &out); err != nil {
				t.Fatalf("workflow: %v", err)
			}
			b, err := LoadBoard(store, out.Head)
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != "succeeded" {
				t.Fatalf("status %s (%s), steps %s", out.Status, out.Error, runSummary(b))
			}
			if s := stepOf(t, b, "read"); !strings.Contains(string(s.Result), `"0\n1\n2\n"`) {
				t.Errorf("read on h2: %s; want every item's file", s.Result)
			}
			if pins != tc.pins {
				t.Errorf("%d pins; want %d", pins, tc.pins)
			}
			for label, n := range tc.attempts {
				if rec := lastRecord(b, label); rec.Attempts != n {
					t.Errorf("%s: %d attempts; want %d", label, rec.Attempts, n)
				}
			}
		})
	}
}

package temporal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// flakyStore fails the calls it is told to (by their order, from 1),
// as an object store that is briefly unreachable does.
type flakyStore struct {
	Store
	mu               sync.Mutex
	puts, gets       int
	failPut, failGet map[int]bool
}

var errStoreDown = errors.New("the store is unreachable (flakyStore)")

func (s *flakyStore) Put(data []byte) (string, error) {
	s.mu.Lock()
	s.puts++
	fail := s.failPut[s.puts]
	s.mu.Unlock()
	if fail {
		return "", errStoreDown
	}
	return s.Store.Put(data)
}

func (s *flakyStore) Get(name string) ([]byte, error) {
	s.mu.Lock()
	s.gets++
	fail := s.failGet[s.gets]
	s.mu.Unlock()
	if fail {
		return nil, errStoreDown
	}
	return s.Store.Get(name)
}

// The workflow's board chunks, its plan source and, after a
// continue-as-new, the board it reads back go through local activities:
// a store that fails does not fail the workflow task (no
// WorkflowTaskFailed in the history, as a panic in the task made), its
// activity is retried and the run succeeds, its board whole.
func TestDevServerStoreFailureRetriesActivity(t *testing.T) {
	srv := startDevServer(t)
	dir := t.TempDir()
	store := DirStore{Dir: dir}
	c, err := client.Dial(client.Options{HostPort: srv.hostPort, Logger: quietLogger(), DataConverter: DataConverter(store, 0)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Only the workflow's handle on the store fails: the 2nd and 3rd
	// writes (the first chunks) and the first read (the board of the
	// continued part).
	flaky := &flakyStore{Store: DirStore{Dir: dir}, failPut: map[int]bool{2: true, 3: true}, failGet: map[int]bool{1: true}}
	acts := &Activities{Store: store, HostID: "h1", WorkRoot: t.TempDir()}
	const queue = "flaky"
	w := worker.New(c, queue, workerOptions)
	Register(w, &Workflow{Store: flaky}, acts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	hw := NewHostWorker(c, queue, acts, workerOptions)
	if err := hw.Start(); err != nil {
		t.Fatal(err)
	}
	defer hw.Stop()

	src := loopPlan(10)
	wd := t.TempDir()
	run := newRun(t, src, wd)
	run.PlanPath = filepath.Join(wd, "loop.yaml")
	if err := os.WriteFile(run.PlanPath, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	we, err := Start(ctx, c, store, run, StartOptions{TaskQueue: queue, Options: Options{MaxHistoryEvents: 40}})
	if err != nil {
		t.Fatal(err)
	}
	first := we.GetRunID() // Get follows the run to its last part
	var out Output
	if err := OutputOf(we.Get(ctx, &out), &out); err != nil {
		t.Fatal(err)
	}
	// Every part of the run: not one workflow task failed.
	for runID := first; runID != ""; {
		next := ""
		it := c.GetWorkflowHistory(ctx, we.GetID(), runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED {
				t.Errorf("run %s: event %d: a workflow task failed: %s", runID, ev.GetEventId(),
					ev.GetWorkflowTaskFailedEventAttributes().GetFailure().GetMessage())
			}
			if a := ev.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				next = a.GetNewExecutionRunId()
			}
		}
		runID = next
	}
	if out.Status != "succeeded" || out.Parts < 1 {
		t.Fatalf("run ended %s after %d continue-as-new (%s); want succeeded, continued at least once", out.Status, out.Parts, out.Error)
	}
	if flaky.puts < 4 || flaky.gets < 2 {
		t.Fatalf("the workflow's store saw %d puts and %d gets: the failures were not all met", flaky.puts, flaky.gets)
	}
	b, err := LoadBoard(store, out.Head)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range b.Steps() {
		if s.Label == "tick" && s.Status == "succeeded" {
			n++
		}
	}
	if n != 10 {
		t.Fatalf("the board holds %d visits of tick, want 10", n)
	}
}

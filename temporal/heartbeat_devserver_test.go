package temporal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// slowStore is a store whose reads and writes take delay while slow says
// so (by the call's kind and order, from 1): an object store far away, a
// big workspace.
type slowStore struct {
	Store
	delay      time.Duration
	mu         sync.Mutex
	gets, puts int
	slow       func(op string, n int) bool
	hit        bool // a slow call was made
}

func (s *slowStore) wait(op string) {
	s.mu.Lock()
	n := &s.gets
	if op == "put" {
		n = &s.puts
	}
	*n++
	slow := s.slow(op, *n)
	s.hit = s.hit || slow
	s.mu.Unlock()
	if slow {
		time.Sleep(s.delay)
	}
}

func (s *slowStore) Get(name string) ([]byte, error) { s.wait("get"); return s.Store.Get(name) }

func (s *slowStore) Put(data []byte) (string, error) { s.wait("put"); return s.Store.Put(data) }

// Every activity of a pinned run that may run longer than the heartbeat
// timeout heartbeats through all of it, so that a live worker's attempt
// is never timed out and run again beside itself (two copies of one step
// on one workspace, or a run re-pinned away from a host that was only
// slow). Each case makes one stretch of one activity slow (a store call
// there takes 2.5 heartbeat timeouts), then reads the run's history: the
// activity finished in its first attempt. Without heartbeats in that
// stretch the server times the attempt out and Temporal starts another
// (attempt 2), which is what each case catches.
//
// The shared queue's worker (the workflow, runner.pin) and the host's
// queue's worker (steps, files()) have Activities of their own, as a
// host's worker restarted with an empty memory has: the host's worker
// reads the run's manifest again before its first step or read.
func TestDevServerLongActivitiesHeartbeat(t *testing.T) {
	srv := startDevServer(t)
	// 3 s: at a load average of 50 a 1 s timeout was missed with beats every 0.33 s.
	const ht = 3 * time.Second
	first := func(kind string) func(string, int) bool {
		return func(op string, n int) bool { return op == kind && n == 1 }
	}
	const step = "steps:\n  - {label: a, type: command, run: 'echo hi > out.txt'}\n"
	cases := []struct {
		name, plan string
		activity   string // the activity id (or, for runner.workspace, type) that must finish in one attempt
		onHost     bool   // the slow store is the host worker's, else the pin's
		slow       func(op string, n int) bool
	}{
		// runner.pin makes the run's workspace: its first read is the
		// manifest.
		{"runner.pin makes the workspace", step, "pin#1", false, first("get")},
		// Before its step runs, the step activity reads the manifest, the
		// plan and the board.
		{"a step reads its workspace and board", step, "a#1", true, first("get")},
		// After it, the step puts the workspace back in the store.
		{"a step snapshots its workspace", step, "a#1", true, first("put")},
		// files() on the run's host reads the manifest too.
		{"files() reads the workspace", "steps:\n  - {label: a, type: board, op: write, key: k, value: '${{ files(\"*.yaml\") }}'}\n",
			WorkspaceReadName, true, first("get")},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			store := DirStore{Dir: dir}
			c, err := client.Dial(client.Options{HostPort: srv.hostPort, Logger: quietLogger(), DataConverter: DataConverter(store, 0)})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			slow := &slowStore{Store: store, delay: 5 * ht / 2, slow: tc.slow}
			root := t.TempDir()
			pinActs := &Activities{Store: store, HostID: "h1", WorkRoot: root, Heartbeat: ht / 4}
			hostActs := &Activities{Store: store, HostID: "h1", WorkRoot: root, Heartbeat: ht / 4}
			if tc.onHost {
				hostActs.Store = slow
			} else {
				pinActs.Store = slow
			}
			queue := fmt.Sprintf("beats-%d-%d", i, time.Now().UnixNano())
			w := worker.New(c, queue, workerOptions)
			Register(w, &Workflow{Store: store}, pinActs)
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			hw := NewHostWorker(c, queue, hostActs, workerOptions)
			if err := hw.Start(); err != nil {
				t.Fatal(err)
			}
			defer hw.Stop()

			src := "version: 1\nname: beats\n" + tc.plan
			wd := t.TempDir()
			run := newRun(t, src, wd)
			run.PlanPath = filepath.Join(wd, "plan.yaml") // the plan's directory travels with the run
			if err := os.WriteFile(run.PlanPath, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			we, err := Start(ctx, c, store, run, StartOptions{TaskQueue: queue, Options: Options{HeartbeatTimeout: ht}})
			if err != nil {
				t.Fatal(err)
			}
			var out Output
			if err := OutputOf(we.Get(ctx, &out), &out); err != nil {
				t.Fatal(err)
			}
			if out.Status != "succeeded" {
				t.Fatalf("run ended %s: %s", out.Status, out.Error)
			}
			slow.mu.Lock()
			hit := slow.hit
			slow.mu.Unlock()
			if !hit {
				t.Fatalf("the slow store saw %d reads and %d writes: the slow call was not met", slow.gets, slow.puts)
			}
			ids := map[int64]string{}
			found := false
			it := c.GetWorkflowHistory(ctx, we.GetID(), we.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					t.Fatal(err)
				}
				if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
					ids[ev.GetEventId()] = a.GetActivityId()
					if a.GetActivityType().GetName() == WorkspaceReadName {
						ids[ev.GetEventId()] = WorkspaceReadName
					}
				}
				if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && ids[a.GetScheduledEventId()] == tc.activity {
					found = true
					if a.GetAttempt() != 1 {
						t.Errorf("%s finished in attempt %d: the server timed out a live worker's attempt (no heartbeat while it was slow)",
							tc.activity, a.GetAttempt())
					}
				}
			}
			if !found {
				t.Errorf("no activity %s in the history (ids %v)", tc.activity, ids)
			}
		})
	}
}

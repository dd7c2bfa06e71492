package temporal

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
)

// A sequential command step leaves few events in the run's history: a
// step carries the board's chunk to its worker (no marker for a put of
// its own), and a quick step of a run pinned to the host that runs the
// workflow is a local activity (one marker, and no workflow task of its
// own). A step may cost perStep events, and the run 40 more (its start
// and end: version markers, the plan's and the last chunk's puts, search
// attributes); 6 a step is the floor of a normal activity (scheduled,
// started, completed, and a workflow task's three).
func TestDevServerEventsPerSequentialStep(t *testing.T) {
	srv := startDevServer(t)
	store := DirStore{Dir: t.TempDir()}
	c, err := client.Dial(client.Options{HostPort: srv.hostPort, Logger: quietLogger(), DataConverter: DataConverter(store, 0)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	acts := &Activities{Store: store, HostID: "h1", WorkRoot: t.TempDir()}
	const queue = "events"
	w := NewWorker(c, queue, acts, workerOptions)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	hw := NewHostWorker(c, queue, acts, workerOptions)
	if err := hw.Start(); err != nil {
		t.Fatal(err)
	}
	defer hw.Stop()
	const n = 40
	for _, tc := range []struct {
		name    string
		opt     Options
		perStep int
	}{
		{"activities", Options{}, 6},
		{"local activities on the host", Options{LocalStepsUnder: 30 * time.Second}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			run := newRun(t, seqPlan(n), wd)
			run.PlanPath = writePlan(t, wd, seqPlan(n))
			ctx := context.Background()
			we, err := Start(ctx, c, store, run, StartOptions{TaskQueue: queue, Options: tc.opt})
			if err != nil {
				t.Fatal(err)
			}
			var out Output
			if err := OutputOf(we.Get(ctx, &out), &out); err != nil {
				t.Fatal(err)
			}
			b, err := LoadBoard(store, out.Head)
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != "succeeded" || len(b.Steps()) != n || out.Parts != 0 {
				t.Fatalf("run %s (%s) with %d steps in %d parts; want succeeded with %d in one", out.Status, out.Error, len(b.Steps()), out.Parts+1, n)
			}
			events, types := runEvents(t, srv.hostPort, we.GetID())
			if bound := tc.perStep*n + 40; events > bound {
				t.Errorf("%d history events for %d steps (%s), want at most %d", events, n, types, bound)
			}
		})
	}
}

package temporal

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
)

// The figures in README's Temporal section come from these two tests,
// which run only when asked:
//
//	go test -run TestBenchStepOverhead -bench-temporal -v ./
//	go test -run TestBenchConcurrentRuns -bench-temporal -bench-runs 1000 -v ./
var (
	benchTemporal = flag.Bool("bench-temporal", false, "run the Temporal benchmarks (dev server, loopback)")
	benchRuns     = flag.Int("bench-runs", 1000, "concurrent runs for TestBenchConcurrentRuns")
	benchVisits   = flag.Int("bench-visits", 200, "loop visits for TestBenchStepOverhead")
)

func loopPlan(visits int) string {
	return fmt.Sprintf(`
version: 1
limits: {max_steps: %d}
steps:
  - {label: tick, type: command, run: "true", max_visits: %d}
  - label: again
    type: branch
    max_visits: %d
    cases:
      - {when: steps.tick.visits < %d, goto: tick}
    default: end
`, 2*visits+10, visits, visits, visits)
}

// Per step: the same loop (a command step and a branch per visit) run by
// `runner run` in process and by `runner-temporal run` on a dev server with
// one worker, as whole processes; and the history events per command step.
func TestBenchStepOverhead(t *testing.T) {
	if !*benchTemporal {
		t.Skip("a benchmark: -bench-temporal")
	}
	c := newCluster(t)
	c.worker(t)
	plan := writePlan(t, c.work, loopPlan(*benchVisits))
	var local, remote []time.Duration
	for i := 0; i < 3; i++ { // interleaved
		start := time.Now()
		p := startProc(t, c.work, c.runner, "run", plan, "--out", filepath.Join(c.work, fmt.Sprintf("local%d.json", i)), "-q")
		if code := p.wait(t, 10*time.Minute); code != 0 {
			t.Fatalf("local run: %d\n%s", code, p.out)
		}
		local = append(local, time.Since(start))
		start = time.Now()
		p = c.run(t, plan, filepath.Join(c.work, fmt.Sprintf("remote%d.json", i)))
		if code := p.wait(t, 30*time.Minute); code != 0 {
			t.Fatalf("temporal run: %d\n%s", code, p.out)
		}
		remote = append(remote, time.Since(start))
		e := endOf(t, p.out.String())
		tc, err := client.Dial(client.Options{HostPort: c.srv.hostPort, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		d, err := tc.DescribeWorkflowExecution(context.Background(), e.Workflow, "")
		tc.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("temporal run %d: %d parts, last part %d history events", i, e.Parts, d.WorkflowExecutionInfo.HistoryLength)
		if e.Parts == 1 {
			t.Logf("history events per command step: %.2f (per step, branches included: %.2f)",
				float64(d.WorkflowExecutionInfo.HistoryLength)/float64(*benchVisits), float64(d.WorkflowExecutionInfo.HistoryLength)/float64(2**benchVisits))
		}
	}
	per := func(ds []time.Duration) string {
		var s []string
		for _, d := range ds {
			s = append(s, fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000/float64(*benchVisits)))
		}
		return strings.Join(s, " ")
	}
	t.Logf("per visit (a command step and a branch), %d visits: in process %s; on Temporal %s", *benchVisits, per(local), per(remote))
}

// Many runs at once: N runs of a 10-step plan started together on one dev
// server with 4 workers; throughput and run latency (start to result).
func TestBenchConcurrentRuns(t *testing.T) {
	if !*benchTemporal {
		t.Skip("a benchmark: -bench-temporal")
	}
	c := newCluster(t)
	for i := 0; i < 4; i++ {
		c.worker(t)
	}
	var b strings.Builder
	b.WriteString("version: 1\nsteps:\n")
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "  - {label: s%d, type: command, run: \"echo %d\"}\n", i, i)
	}
	src := b.String()
	store := Store{Dir: c.blobs}
	tc, err := client.Dial(client.Options{HostPort: c.srv.hostPort, Logger: quietLogger(), DataConverter: DataConverter(store, 0)})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	n := *benchRuns
	lat := make([]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			run := newRun(t, src, c.work)
			var we client.WorkflowRun
			var err error
			// A busy server may time a start out; the id makes a retry safe.
			for try := 0; try < 5; try++ {
				if we, err = Start(context.Background(), tc, store, run, StartOptions{TaskQueue: c.queue}); err == nil || !transient(err) {
					break
				}
			}
			if err == nil {
				var out Output
				err = we.Get(context.Background(), &out)
				for try := 0; err != nil && transient(err) && try < 10; try++ {
					err = tc.GetWorkflow(context.Background(), we.GetID(), "").Get(context.Background(), &out)
				}
				if err == nil && out.Status != "succeeded" {
					err = fmt.Errorf("run %s", out.Status)
				}
			}
			lat[i], errs[i] = time.Since(t0), err
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration { return lat[int(p*float64(n-1))].Round(time.Millisecond) }
	t.Logf("%d runs of 10 steps, 4 workers: %s wall, %.1f runs/s, %.0f steps/s; run latency p50 %s, p99 %s, max %s",
		n, wall.Round(time.Millisecond), float64(n)/wall.Seconds(), float64(10*n)/wall.Seconds(), pct(0.5), pct(0.99), lat[n-1].Round(time.Millisecond))
}

package temporal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// seqPlan is n `command` steps one after another, each with a timeout
// (so --local-steps-under can take it).
func seqPlan(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: seq\nsteps:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - {label: s%d, type: command, run: \"true\", timeout: 10s}\n", i)
	}
	return b.String()
}

// runEvents counts the history events of a run's last part (the only
// one at the sizes measured: the callers check), and says how many of
// each type.
func runEvents(t *testing.T, hostPort, workflowID string) (int, string) {
	t.Helper()
	tc, err := client.Dial(client.Options{HostPort: hostPort, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	n := 0
	byType := map[string]int{}
	it := tc.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		n++
		byType[strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_")]++
	}
	var types []string
	for k, v := range byType {
		types = append(types, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(types)
	return n, strings.Join(types, ", ")
}

// The figures of docs/benchmarks.md (Temporal, sequential command steps):
// a plan of -bench-steps `command` steps run by `runner run` in process,
// by `runner-temporal run` on a dev server with one worker (the run's
// workspace travels with it: the run is pinned to the worker's host) and
// the same with --local-steps-under 30s, interleaved, as whole processes;
// per step, the wall time and the history events.
//
//	go test ./ -run TestBenchSequentialSteps -v -bench-temporal -bench-steps 10,100
func TestBenchSequentialSteps(t *testing.T) {
	if !*benchTemporal {
		t.Skip("a benchmark: -bench-temporal")
	}
	c := newCluster(t, strings.Fields(*benchServer)...)
	c.worker(t)
	for _, f := range strings.Split(*benchSteps, ",") {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n < 1 {
			t.Fatalf("-bench-steps %q: want numbers", *benchSteps)
		}
		dir := filepath.Join(c.work, fmt.Sprintf("seq%d", n))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		plan := writePlan(t, dir, seqPlan(n))
		modes := []string{"in process", "activities", "local on host"}
		walls := map[string][]time.Duration{}
		events := map[string][]int{}
		for i := 0; i < *benchRounds; i++ { // interleaved
			for _, mode := range modes {
				out := filepath.Join(dir, fmt.Sprintf("%d-%s.json", i, strings.ReplaceAll(mode, " ", "-")))
				start := time.Now()
				var p *proc
				switch mode {
				case "in process":
					p = startProc(t, dir, c.runner, "run", plan, "--out", out, "-q")
				case "activities":
					p = c.run(t, plan, out)
				default:
					p = c.run(t, plan, out, "--local-steps-under", "30s")
				}
				if code := p.wait(t, 30*time.Minute); code != 0 {
					t.Fatalf("%s: exit %d\n%s", mode, code, p.out)
				}
				walls[mode] = append(walls[mode], time.Since(start))
				allSteps(t, out, n)
				if mode == "in process" {
					continue
				}
				e := endOf(t, p.out.String())
				if e.Parts != 1 {
					t.Fatalf("the run has %d parts: want its events in one", e.Parts)
				}
				ev, _ := runEvents(t, c.srv.hostPort, e.Workflow)
				events[mode] = append(events[mode], ev)
			}
		}
		per := func(ds []time.Duration) string {
			var s []string
			for _, d := range ds {
				s = append(s, fmt.Sprintf("%.1f", float64(d.Microseconds())/1000/float64(n)))
			}
			return strings.Join(s, " ")
		}
		perEv := func(es []int) string {
			var s []string
			for _, e := range es {
				s = append(s, fmt.Sprintf("%.2f", float64(e)/float64(n)))
			}
			return strings.Join(s, " ")
		}
		load, _ := os.ReadFile("/proc/loadavg")
		t.Logf("%d steps (load %s), per step: in process %s ms; activities %s ms, %s events; local on host %s ms, %s events",
			n, strings.Join(strings.Fields(string(load))[:3], " "), per(walls["in process"]),
			per(walls["activities"]), perEv(events["activities"]), per(walls["local on host"]), perEv(events["local on host"]))
	}
}

// allSteps fails the test unless the run's file says it succeeded with n
// step records.
func allSteps(t *testing.T, path string, n int) {
	t.Helper()
	b := loadBoard(t, path)
	if b.Run().Status != "succeeded" || len(b.Steps()) != n {
		t.Fatalf("%s: run %s with %d steps, want succeeded with %d", path, b.Run().Status, len(b.Steps()), n)
	}
}

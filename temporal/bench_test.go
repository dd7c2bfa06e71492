package temporal

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/steps"
	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
)

// The figures in docs/benchmarks.md (Temporal) come from these two tests,
// which run only when asked:
//
//	go test -run TestBenchStepOverhead -bench-temporal -v ./
//	go test -run TestBenchConcurrentRuns -bench-temporal -bench-runs 1000 -v ./
//	go test ./ -timeout 60m -run TestBenchConcurrentRuns -bench-temporal -bench-runs 1000 -bench-workers 3 -bench-inprocess -v
//
// (Flags for the test after the package, or all before it: the go command
// hands everything from its first unknown flag on to the test binary,
// whose flag parsing stops at a package name.)
var (
	benchTemporal = flag.Bool("bench-temporal", false, "run the Temporal benchmarks (dev server, loopback)")
	benchRuns     = flag.Int("bench-runs", 1000, "concurrent runs for TestBenchConcurrentRuns")
	benchVisits   = flag.Int("bench-visits", 200, "loop visits for TestBenchStepOverhead")
	benchServer   = flag.String("bench-server-flags", "", "more `temporal server start-dev` flags for the benchmarks, space-separated")
	benchWorkers  = flag.Int("bench-workers", 4, "`runner-temporal worker` processes for TestBenchConcurrentRuns")
	benchInProc   = flag.Bool("bench-inprocess", false, "TestBenchConcurrentRuns: first run the same runs in process, as the baseline")
	benchRounds   = flag.Int("bench-rounds", 3, "TestBenchQuickSteps, TestBenchSequentialSteps: interleaved rounds")
	benchSteps    = flag.String("bench-steps", "10,100", "TestBenchSequentialSteps: plan sizes, comma-separated")
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
	c := newCluster(t, strings.Fields(*benchServer)...)
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
// server with -bench-workers workers; throughput, run latency (start to
// result), and the CPU time and peak memory of the server and each
// worker. With -bench-inprocess the same N runs first run in this process
// (benchInProcess), the baseline.
func TestBenchConcurrentRuns(t *testing.T) {
	if !*benchTemporal {
		t.Skip("a benchmark: -bench-temporal")
	}
	if *benchWorkers < 1 {
		t.Fatalf("-bench-workers %d: want 1 or more", *benchWorkers)
	}
	var b strings.Builder
	b.WriteString("version: 1\nsteps:\n")
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, "  - {label: s%d, type: command, run: \"echo %d\"}\n", i, i)
	}
	src := b.String()
	n := *benchRuns
	if *benchInProc {
		benchInProcess(t, src, n)
	}
	c := newCluster(t, strings.Fields(*benchServer)...)
	var workers []*proc
	for i := 0; i < *benchWorkers; i++ {
		workers = append(workers, c.worker(t))
	}
	// The runs' plan file, which each run's workspace carries to the
	// worker it is pinned to (the default; runs on Temporal, as
	// `runner-temporal run` starts them).
	planFile := writePlan(t, c.work, src)
	store := DirStore{Dir: c.blobs}
	tc, err := client.Dial(client.Options{HostPort: c.srv.hostPort, Logger: quietLogger(), DataConverter: DataConverter(store, 0)})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	// A bound on a broken benchmark (a run that never ends), not a
	// measure: ten seconds a run and ten minutes more (a 100-run set took
	// over 7 minutes at a load average of 50 on the 2-core VM).
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(n)*10*time.Second+10*time.Minute)
	defer cancel()
	lat := make([]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	cpu0 := clusterCPU(t, c.srv.cmd.Process.Pid, workers)
	req0 := serverRequests(t, c.srv.metrics)
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			run := newRun(t, src, c.work)
			run.PlanPath = planFile
			var we client.WorkflowRun
			var err error
			// A busy server may time a start out; the id makes a retry safe.
			for try := 0; try < 5; try++ {
				if we, err = Start(ctx, tc, store, run, StartOptions{TaskQueue: c.queue}); err == nil || !transient(err) {
					break
				}
			}
			if err == nil {
				var out Output
				err = OutputOf(we.Get(ctx, &out), &out)
				for try := 0; err != nil && transient(err) && try < 10; try++ {
					err = OutputOf(tc.GetWorkflow(ctx, we.GetID(), "").Get(ctx, &out), &out)
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
	cpu := clusterCPU(t, c.srv.cmd.Process.Pid, workers).minus(cpu0)
	req := serverRequests(t, c.srv.metrics)
	for _, err := range errs {
		if err != nil {
			for i, p := range workers {
				t.Logf("worker %d:\n%s", i+1, p.out)
			}
			t.Fatal(err)
		}
	}
	w := len(workers)
	t.Logf("on Temporal: %d runs of 10 steps, %d workers: %s", n, w, latencies(lat, wall))
	t.Logf("CPU during the runs (user+system): dev server %s, %d workers %s (%s), client (this test process) %s; %.2f of %d cores busy",
		cpu.server.Round(10*time.Millisecond), w, cpu.workerSum().Round(10*time.Millisecond), cpu.workerList(), cpu.client.Round(10*time.Millisecond),
		(cpu.server+cpu.workerSum()+cpu.client).Seconds()/wall.Seconds(), runtime.NumCPU())
	var rss []string
	for _, p := range workers {
		rss = append(rss, peakRSS(p.cmd.Process.Pid))
	}
	t.Logf("peak resident memory: dev server %s, workers %s", peakRSS(c.srv.cmd.Process.Pid), strings.Join(rss, " "))
	t.Logf("per step: %s", perStep(req0, req, 10*n))
}

// benchInProcess is the baseline of TestBenchConcurrentRuns: the same n
// runs of the same plan, all started at once in this one process, each
// as `runner run` runs a plan (the root engine, a board saved to its own
// blackboard.json with a journal beside it). In process rather than n
// `runner run` processes because the Temporal side starts no process per
// run either (its runs are started by this process and run by long-lived
// workers): n process starts would measure Go's start-up, not the engine.
// Each step's command is a process on both sides.
func benchInProcess(t *testing.T, src string, n int) {
	prog, err := engine.Compile("plan.yaml", []byte(src), steps.Registry())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lat := make([]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	cpu0 := procCPU(t, os.Getpid())
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			errs[i] = func() error {
				work := filepath.Join(dir, strconv.Itoa(i))
				if err := os.Mkdir(work, 0o755); err != nil {
					return err
				}
				run := newRun(t, src, work)
				b, err := board.Create(filepath.Join(work, "blackboard.json"), run, board.Options{})
				if err != nil {
					return err
				}
				defer b.Close()
				r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: work, Vars: run.Vars}
				if err := r.Run(context.Background()); err != nil {
					return err
				}
				if st := b.Run().Status; st != board.StatusSucceeded {
					return fmt.Errorf("run %s", st)
				}
				return b.Save()
			}()
			lat[i] = time.Since(t0)
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	cpu := procCPU(t, os.Getpid()) - cpu0
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("in process: %d runs of 10 steps: %s", n, latencies(lat, wall))
	t.Logf("in process: CPU during the runs (user+system, this process) %s; %.2f of %d cores busy; peak resident memory %s",
		cpu.Round(10*time.Millisecond), cpu.Seconds()/wall.Seconds(), runtime.NumCPU(), peakRSS(os.Getpid()))
}

// latencies sorts lat and says wall time, throughput and run latency.
func latencies(lat []time.Duration, wall time.Duration) string {
	n := len(lat)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration { return lat[int(p*float64(n-1))].Round(time.Millisecond) }
	return fmt.Sprintf("%s wall, %.1f runs/s, %.0f steps/s; run latency p50 %s, p99 %s, max %s",
		wall.Round(time.Millisecond), float64(n)/wall.Seconds(), float64(10*n)/wall.Seconds(), pct(0.5), pct(0.99), lat[n-1].Round(time.Millisecond))
}

// peakRSS is a process's peak resident memory so far (VmHWM in
// /proc/PID/status), or "?" when it cannot be read.
func peakRSS(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				return "?"
			}
			return fmt.Sprintf("%.0f MB", float64(kb)/1024)
		}
	}
	return "?"
}

// serverRequests counts the dev server's requests so far from its
// Prometheus metrics: gRPC calls its frontend served ("frontend
// PollActivityTaskQueue") and its database operations ("persistence", and
// by operation).
func serverRequests(t *testing.T, port int) map[string]float64 {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Logf("no server metrics: %v", err)
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		metric, rest, ok := strings.Cut(line, "{")
		if !ok || (metric != "service_requests" && metric != "persistence_requests") {
			continue
		}
		labels, value, _ := strings.Cut(rest, "} ")
		if metric == "service_requests" && !strings.Contains(labels, `service_name="frontend"`) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		_, op, _ := strings.Cut(labels, `operation="`)
		op, _, _ = strings.Cut(op, `"`)
		if metric == "service_requests" {
			out["frontend "+op] += v
		} else {
			out["persistence"] += v
			out["persistence "+op] += v
		}
	}
	return out
}

// perStep says what the server did per step between two counts, the
// largest first, leaving out what came to under 0.05 a step.
func perStep(before, after map[string]float64, steps int) string {
	type kv struct {
		k string
		v float64
	}
	var l []kv
	for k, v := range after {
		if d := (v - before[k]) / float64(steps); d >= 0.05 {
			l = append(l, kv{k, d})
		}
	}
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v })
	var out []string
	for _, e := range l {
		out = append(out, fmt.Sprintf("%s %.2f", e.k, e.v))
	}
	return strings.Join(out, ", ")
}

// cpuTimes is CPU time (user+system) used so far by the dev server, each
// worker and this process (the client), read from /proc.
type cpuTimes struct {
	server, client time.Duration
	workers        []time.Duration
}

func clusterCPU(t *testing.T, server int, workers []*proc) cpuTimes {
	c := cpuTimes{server: procCPU(t, server), client: procCPU(t, os.Getpid())}
	for _, w := range workers {
		c.workers = append(c.workers, procCPU(t, w.cmd.Process.Pid))
	}
	return c
}

func (c cpuTimes) minus(d cpuTimes) cpuTimes {
	out := cpuTimes{server: c.server - d.server, client: c.client - d.client}
	for i := range c.workers {
		out.workers = append(out.workers, c.workers[i]-d.workers[i])
	}
	return out
}

func (c cpuTimes) workerSum() (s time.Duration) {
	for _, w := range c.workers {
		s += w
	}
	return s
}

func (c cpuTimes) workerList() string {
	var s []string
	for _, w := range c.workers {
		s = append(s, w.Round(10*time.Millisecond).String())
	}
	return strings.Join(s, " ")
}

// procCPU is a process's user+system time from /proc/PID/stat (fields 14
// and 15, in clock ticks of 1/100 s, Linux's USER_HZ).
func procCPU(t *testing.T, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Logf("no CPU figure for %d: %v", pid, err)
		return 0
	}
	// The command name (field 2) may hold spaces; fields after it are plain.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// Quick steps as local activities: the same loop, its
// command step given a timeout (10 s) so that --local-steps-under may send
// it to a local activity, run interleaved three ways, as whole processes:
// `runner run` in process; `runner-temporal run` on a dev server with one
// worker, every step a normal activity; and the same with
// --local-steps-under 30s. Both Temporal runs share the workspace
// (--shared-workspace): a run pinned to a host keeps normal activities.
// Per loop visit (a command step and a branch): wall time and the CPU
// time (user+system) of the dev server, the worker (with its steps'
// processes, as the in-process figure has them) and the client.
//
//	go test ./ -run TestBenchQuickSteps -v -bench-temporal -bench-visits 100 \
//	  -bench-server-flags "--sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=normal"
func TestBenchQuickSteps(t *testing.T) {
	if !*benchTemporal {
		t.Skip("a benchmark: -bench-temporal")
	}
	n := *benchVisits
	c := newCluster(t, strings.Fields(*benchServer)...)
	w := c.worker(t)
	src := strings.Replace(loopPlan(n), `run: "true",`, `run: "true", timeout: 10s,`, 1)
	plan := writePlan(t, c.work, src)
	type figure struct{ wall, server, worker, client time.Duration }
	got := map[string][]figure{}
	per := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000/float64(n)) }
	for i := 0; i < *benchRounds; i++ { // interleaved
		for _, mode := range []string{"in process", "activities", "local activities"} {
			load, _ := os.ReadFile("/proc/loadavg")
			out := filepath.Join(c.work, fmt.Sprintf("%d-%s.json", i, strings.ReplaceAll(mode, " ", "-")))
			cpu0 := cpuTimes{server: procCPU(t, c.srv.cmd.Process.Pid), workers: []time.Duration{procCPUAll(t, w.cmd.Process.Pid)}}
			start := time.Now()
			var p *proc
			switch mode {
			case "in process":
				p = startProc(t, c.work, c.runner, "run", plan, "--out", out, "-q")
			case "activities":
				p = c.run(t, plan, out, "--shared-workspace")
			default:
				p = c.run(t, plan, out, "--shared-workspace", "--local-steps-under", "30s")
			}
			if code := p.wait(t, 30*time.Minute); code != 0 {
				t.Fatalf("%s: exit %d\n%s", mode, code, p.out)
			}
			f := figure{wall: time.Since(start), client: p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()}
			if mode != "in process" {
				f.server = procCPU(t, c.srv.cmd.Process.Pid) - cpu0.server
				f.worker = procCPUAll(t, w.cmd.Process.Pid) - cpu0.workers[0]
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
				t.Logf("%d %s: %d parts, last part %d history events (%.2f per visit)", i, mode, e.Parts, d.WorkflowExecutionInfo.HistoryLength,
					float64(d.WorkflowExecutionInfo.HistoryLength)/float64(n))
			}
			got[mode] = append(got[mode], f)
			t.Logf("%d %s (load %s): per visit, ms: wall %s; CPU server %s, worker %s, client %s", i, mode, strings.Join(strings.Fields(string(load))[:3], " "),
				per(f.wall), per(f.server), per(f.worker), per(f.client))
		}
	}
	for _, mode := range []string{"in process", "activities", "local activities"} {
		var wall, cpu []string
		for _, f := range got[mode] {
			wall = append(wall, per(f.wall))
			cpu = append(cpu, per(f.server+f.worker+f.client))
		}
		t.Logf("%s, %d visits, per visit in ms: wall %s; CPU (server+worker+client) %s", mode, n, strings.Join(wall, " "), strings.Join(cpu, " "))
	}
}

// procCPUAll is procCPU with the CPU of the children the process has
// waited for (a worker's steps' processes): fields 14 to 17.
func procCPUAll(t *testing.T, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Logf("no CPU figure for %d: %v", pid, err)
		return 0
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var ticks int64
	for _, i := range []int{11, 12, 13, 14} {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

package temporal

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// cluster is a dev server, a shared blob store, a task queue of its own
// and the binaries, for one test.
type cluster struct {
	srv                *devServer
	runner, rt         string
	blobs, queue, work string
	workers            []*proc
}

func newCluster(t *testing.T, serverFlags ...string) *cluster {
	if testing.Short() {
		t.Skip("starts a Temporal dev server and builds binaries")
	}
	srv := startDevServer(t, serverFlags...)
	runner, rt := buildBinaries(t)
	return &cluster{srv: srv, runner: runner, rt: rt, blobs: t.TempDir(),
		queue: fmt.Sprintf("q-%d", time.Now().UnixNano()), work: t.TempDir()}
}

func (c *cluster) worker(t *testing.T) *proc {
	p := startProc(t, c.work, c.rt, "worker", "--temporal", c.srv.hostPort, "--task-queue", c.queue, "--blobs", c.blobs, "--log-format", "json",
		"--work-root", t.TempDir())
	c.workers = append(c.workers, p)
	return p
}

func (c *cluster) run(t *testing.T, plan, out string, extra ...string) *proc {
	args := append([]string{"run", plan, "--temporal", c.srv.hostPort, "--task-queue", c.queue, "--blobs", c.blobs, "--out", out, "--events"}, extra...)
	return startProc(t, c.work, c.rt, args...)
}

// endOf reads the `end` event of a `run --events` output.
func endOf(t *testing.T, out string) end {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct {
			End *end `json:"end"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.End != nil {
			return *e.End
		}
	}
	t.Fatalf("no end event in:\n%s", out)
	return end{}
}

type end struct {
	RunID, Status, Error, Board, Workflow string
	Parts                                 int
}

func writePlan(t *testing.T, dir, src string) string {
	p := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func waitFile(t *testing.T, path string, limit time.Duration) string {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(path); err == nil && len(data) > 0 && strings.HasSuffix(string(data), "\n") {
			return string(data)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not appear within %s", path, limit)
	return ""
}

const killPlan = `
version: 1
name: killed-worker
vars: {rounds: 2}
steps:
  - {label: prepare, type: command, run: "echo ready"}
  - label: both
    parallel:
      - {label: left, type: command, run: "echo left"}
      - {label: right, type: board, op: write, key: side, value: right}
  - label: long
    type: command
    run: 'echo $PPID >> long.pids; sleep 3; echo done'
  - {label: work, type: command, run: "echo round ${{ steps.work.visits + 1 }}"}
  - label: again
    type: branch
    cases:
      - {when: steps.work.visits < vars.rounds, goto: work}
    default: check
  - {label: skipped, type: command, run: "echo never"}
  - {label: check, type: command, run: "echo ${{ steps.long.stdout }} ${{ board('side') }} ${{ steps.work.output }}"}
`

// Two workers; the one running a step is killed (SIGKILL) in the middle of
// it. The step runs again on the other, the run succeeds, and its
// blackboard.json replays offline and matches an in-process run.
func TestDevServerWorkerKilledMidStep(t *testing.T) {
	c := newCluster(t)
	w1, w2 := c.worker(t), c.worker(t)
	plan := writePlan(t, c.work, killPlan)
	out := filepath.Join(c.work, "temporal.json")
	run := c.run(t, plan, out, "--heartbeat-timeout", "3s", "--shared-workspace") // the workers share c.work

	pids := waitFile(t, filepath.Join(c.work, "long.pids"), 60*time.Second)
	pid, err := strconv.Atoi(strings.TrimSpace(pids))
	if err != nil {
		t.Fatalf("long.pids = %q", pids)
	}
	var killed, other *proc
	switch pid {
	case w1.cmd.Process.Pid:
		killed, other = w1, w2
	case w2.cmd.Process.Pid:
		killed, other = w2, w1
	default:
		t.Fatalf("step long runs under pid %d, neither worker (%d, %d)", pid, w1.cmd.Process.Pid, w2.cmd.Process.Pid)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed.wait(t, 10*time.Second)

	if code := run.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("run exited %d:\n%s\nsurviving worker:\n%s", code, run.out, other.out)
	}
	e := endOf(t, run.out.String())
	if e.Status != "succeeded" || e.Board != out {
		t.Fatalf("end = %+v", e)
	}
	// At least once: the killed step ran again, on the other worker.
	lines := strings.Fields(string(must(os.ReadFile(filepath.Join(c.work, "long.pids")))))
	if len(lines) != 2 || lines[1] != strconv.Itoa(other.cmd.Process.Pid) {
		t.Errorf("long ran under pids %v; want the killed worker's, then %d", lines, other.cmd.Process.Pid)
	}

	rep := startProc(t, c.work, c.runner, "replay", out, "--offline")
	if code := rep.wait(t, time.Minute); code != 0 || !strings.Contains(rep.out.String(), "matched") {
		t.Fatalf("replay --offline exited %d:\n%s", code, rep.out)
	}

	// The same plan in process, in a fresh directory.
	dir := t.TempDir()
	inproc := filepath.Join(dir, "inproc.json")
	ip := startProc(t, dir, c.runner, "run", plan, "--out", inproc, "-q")
	if code := ip.wait(t, time.Minute); code != 0 {
		t.Fatalf("in-process run exited %d:\n%s", code, ip.out)
	}
	want, got := loadBoard(t, inproc), loadBoard(t, out)
	// The one difference: long ran twice, its first attempt lost with
	// its worker, and says so.
	gotSteps := got.Steps()
	for i, s := range gotSteps {
		if s.Label == "long" {
			if s.Attempts != 2 {
				t.Errorf("long: attempts %d, want 2", s.Attempts)
			}
			gotSteps[i].Attempts = 1
		}
	}
	if d := sameSteps(want.Steps(), gotSteps); d != "" {
		t.Errorf("steps differ: %s", d)
	}
	if d := firstDiff(entriesView(want), entriesView(got)); d != "" {
		t.Errorf("entries differ: %s", d)
	}
	if got.Run().PlanSHA256 != want.Run().PlanSHA256 || got.Run().Status != "succeeded" {
		t.Errorf("run = %+v", got.Run())
	}
}

func loadBoard(t *testing.T, path string) *board.Board {
	b, err := board.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The dev server is stopped while a step runs and started again on its
// database file: the run goes on and finishes.
func TestDevServerRestart(t *testing.T) {
	c := newCluster(t)
	c.worker(t)
	plan := writePlan(t, c.work, `
version: 1
steps:
  - {label: first, type: command, run: "echo started > first.txt; sleep 2; echo one"}
  - {label: second, type: command, run: "echo ${{ steps.first.stdout }} two"}
`)
	out := filepath.Join(c.work, "bb.json")
	run := c.run(t, plan, out, "--shared-workspace") // first.txt in c.work
	waitFile(t, filepath.Join(c.work, "first.txt"), 60*time.Second)
	c.srv.stop()
	time.Sleep(time.Second)
	c.srv.start()
	if code := run.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("run exited %d:\n%s", code, run.out)
	}
	b := loadBoard(t, out)
	if got := runSummary(b); got != "first:succeeded second:succeeded" {
		t.Errorf("steps: %s", got)
	}
	if s := b.Steps(); len(s) == 2 && !strings.Contains(string(s[1].Result), `"output":"one\n two"`) {
		t.Errorf("second = %s", s[1].Result)
	}
}

// A loop of 3,000 visits runs to the end through continue-as-new.
func TestDevServerLongLoopContinuesAsNew(t *testing.T) {
	c := newCluster(t)
	c.worker(t)
	c.worker(t)
	plan := writePlan(t, c.work, `
version: 1
limits: {max_steps: 7000}
steps:
  - {label: tick, type: command, run: "true", max_visits: 3000}
  - label: again
    type: branch
    max_visits: 3000
    cases:
      - {when: steps.tick.visits < 3000, goto: tick}
    default: end
`)
	out := filepath.Join(c.work, "bb.json")
	start := time.Now()
	run := c.run(t, plan, out, "--max-history-events", "3000")
	if code := run.wait(t, 40*time.Minute); code != 0 {
		t.Fatalf("run exited %d:\n%.4000s", code, run.out)
	}
	e := endOf(t, run.out.String())
	if e.Parts < 2 {
		t.Errorf("the run took %d part(s); want it to continue as new", e.Parts)
	}
	b := loadBoard(t, out)
	ticks := 0
	for _, s := range b.Steps() {
		if s.Label == "tick" {
			ticks++
			if s.Visit != ticks {
				t.Fatalf("tick visit %d recorded as #%d", ticks, s.Visit)
			}
		}
	}
	if ticks != 3000 || len(b.Steps()) != 6000 || b.Run().Status != "succeeded" {
		t.Errorf("%d ticks, %d steps, run %s", ticks, len(b.Steps()), b.Run().Status)
	}
	t.Logf("3000 visits (6000 steps) in %s, %d parts", time.Since(start).Round(time.Millisecond), e.Parts)
}

// The default runner binary runs a plan on Temporal through
// runner-temporal (found through RUNNER_TEMPORAL), showing each finished
// step as for an in-process run, and prints where blackboard.json is.
func TestDevServerThroughRunnerCLI(t *testing.T) {
	c := newCLICluster(t)
	plan := writePlan(t, c.work, `
version: 1
steps:
  - {label: hello, type: command, run: "echo hello"}
  - {label: bad, type: command, run: "exit 4", continue_on_error: true}
  - {label: world, type: command, run: "echo ${{ steps.hello.stdout }} world"}
`)
	out := filepath.Join(c.work, "bb.json")
	p := startProc(t, c.work, c.runner, "run", plan, "--engine", "temporal", "--temporal", c.srv.hostPort,
		"--task-queue", c.queue, "--blobs", c.blobs, "--out", out, "--log-format", "console")
	if code := p.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.out)
	}
	got := p.out.String()
	for _, want := range []string{"✓ hello", "✗ bad", "exit status 4", "✓ world", "succeeded in", "blackboard: " + out} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	b := loadBoard(t, out)
	if runSummary(b) != "hello:succeeded bad:failed world:succeeded" {
		t.Errorf("steps: %s", runSummary(b))
	}
	// Where the steps ran: said once, and on each step's line and record.
	host := stepOf(t, b, "hello").Host
	if host == "" || stepOf(t, b, "world").Host != host {
		t.Errorf("the records' hosts: hello %q, world %q; want the worker's", host, stepOf(t, b, "world").Host)
	}
	for _, want := range []string{"steps run on host " + host + "\n", "✓ hello", "  on " + host + "\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}

	// JSON logs: the same events as an in-process run, one per step and
	// one at the end, each with the run's id.
	out2 := filepath.Join(c.work, "bb2.json")
	p = startProc(t, c.work, c.runner, "run", plan, "--engine", "temporal", "--temporal", c.srv.hostPort,
		"--task-queue", c.queue, "--blobs", c.blobs, "--out", out2, "--log-format", "json")
	if code := p.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.out)
	}
	runID := loadBoard(t, out2).Run().ID
	var events []string
	for _, line := range strings.Split(p.out.String(), "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		if ev["run"] != runID {
			t.Errorf("event without the run id %s: %s", runID, line)
		}
		events = append(events, fmt.Sprintf("%s %v %v %v", ev["level"], ev["message"], ev["step"], ev["status"]))
		if ev["message"] == "step finished" && ev["host"] == nil {
			t.Errorf("a step's event without its host: %s", line)
		}
	}
	want := []string{"info steps run on host hello <nil>", "info step finished hello succeeded", "error step finished bad failed",
		"info step finished world succeeded", "info run finished <nil> succeeded"}
	if strings.Join(events, "; ") != strings.Join(want, "; ") {
		t.Errorf("JSON events:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
	}
}

package temporal

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A step that appends its pid to a file every 100 ms, 40 times.
const tickPlan = `
version: 1
name: orphans
steps:
  - label: tick
    type: command
    run: 'echo "$PPID $$" >> started; i=0; while [ $i -lt 40 ]; do echo $$ >> ticks; sleep 0.1; i=$((i+1)); done; echo ticked'
  - {label: after, type: command, run: "echo ${{ steps.tick.stdout }}"}
`

// The worker running a step is killed with SIGKILL mid-step: the step's
// process stops with it (its watchdog, internal/sys/proc), not beside its retry;
// a worker started afterwards runs the step again to its end, and the
// step's record counts Temporal's two attempts.
func TestDevServerKilledWorkerLeavesNoOrphan(t *testing.T) {
	c := newCluster(t)
	w1 := c.worker(t)
	plan := writePlan(t, c.work, tickPlan)
	out := filepath.Join(c.work, "bb.json")
	run := c.run(t, plan, out, "--heartbeat-timeout", "3s", "--shared-workspace") // the retry goes to the second worker, not to the dead one's host

	first := strings.Fields(waitFile(t, filepath.Join(c.work, "started"), time.Minute))
	if len(first) != 2 || first[0] != strconv.Itoa(w1.cmd.Process.Pid) {
		t.Fatalf("started = %v; want the worker's pid %d and the step's", first, w1.cmd.Process.Pid)
	}
	old := first[1]
	ticks := filepath.Join(c.work, "ticks")
	for deadline := time.Now().Add(time.Minute); countOf(ticks, old) < 3; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the step did not tick")
		}
	}
	if err := syscall.Kill(w1.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w1.wait(t, 10*time.Second)
	// The grace: the watchdog acts at once; a second is ten ticks.
	time.Sleep(time.Second)
	afterKill := countOf(ticks, old)
	if afterKill >= 40 {
		t.Fatalf("the step ticked %d times: it was not killed mid-step", afterKill)
	}

	w2 := c.worker(t)
	if code := run.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("run exited %d:\n%s\nworker:\n%s", code, run.out, w2.out)
	}
	if n := countOf(ticks, old); n != afterKill {
		t.Errorf("the killed worker's step went on: %d ticks a second after the kill, %d at the end", afterKill, n)
	}
	if pid, _ := strconv.Atoi(old); syscall.Kill(pid, 0) == nil {
		if stat, err := os.ReadFile("/proc/" + old + "/stat"); err == nil && !strings.Contains(string(stat), ") Z ") {
			t.Errorf("the killed worker's step (pid %s) still runs", old)
		}
	}
	lines := strings.Fields(string(must(os.ReadFile(filepath.Join(c.work, "started")))))
	if len(lines) != 4 || lines[2] != strconv.Itoa(w2.cmd.Process.Pid) {
		t.Fatalf("started = %v; want the step started again by the second worker (%d)", lines, w2.cmd.Process.Pid)
	}
	if n := countOf(ticks, lines[3]); n != 40 {
		t.Errorf("the retry ticked %d times, want 40", n)
	}

	b := loadBoard(t, out)
	rec := lastRecord(b, "tick")
	if rec.Status != "succeeded" || rec.Attempts != 2 {
		t.Errorf("tick: status %s, attempts %d; want succeeded in 2 attempts (one lost with its worker)", rec.Status, rec.Attempts)
	}
	if rec := lastRecord(b, "after"); rec.Attempts != 1 {
		t.Errorf("after: attempts %d, want 1", rec.Attempts)
	}
	raw := string(must(os.ReadFile(out)))
	if !strings.Contains(raw, `"attempts":2`) {
		t.Errorf("blackboard.json does not say tick's 2 attempts")
	}
	show := startProc(t, c.work, c.runner, "board", out, "show", "--format", "json")
	if code := show.wait(t, time.Minute); code != 0 || !strings.Contains(show.out.String(), `"attempts": 2`) && !strings.Contains(show.out.String(), `"attempts":2`) {
		t.Errorf("runner board show exited %d without tick's 2 attempts:\n%.3000s", code, show.out)
	}
	rep := startProc(t, c.work, c.runner, "report", out, "-o", filepath.Join(c.work, "report.html"))
	if code := rep.wait(t, time.Minute); code != 0 {
		t.Fatalf("report exited %d:\n%s", code, rep.out)
	}
	if html := string(must(os.ReadFile(filepath.Join(c.work, "report.html")))); !strings.Contains(html, "2 attempts") {
		t.Errorf("the report does not show tick's 2 attempts")
	}
}

// countOf counts the lines of path that are word.
func countOf(path, word string) int {
	data, _ := os.ReadFile(path)
	n := 0
	for _, l := range strings.Fields(string(data)) {
		if l == word {
			n++
		}
	}
	return n
}

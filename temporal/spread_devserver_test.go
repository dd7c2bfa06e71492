package temporal

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// spreadBenchPlan is a 30-item fan-out of one-second items, then a step
// on the run's host that reads what they wrote.
const spreadBenchPlan = `
version: 1
name: spread-bench
steps:
  - {label: each, type: command, for_each: '0..29', max_concurrency: 30, run: "sleep 1; mkdir -p out; echo ${{ item }} > out/${{ item }}"}
  - {label: read, type: command, run: "cat out/* | sort -n | tr '\n' ' '"}
`

// One large fan-out finishes sooner on three workers than on one (each
// runs at most 10 steps at once), with the same records, and the step
// after it reads every item's file.
func TestDevServerSpreadFanOut(t *testing.T) {
	c := newCluster(t)
	checkout := t.TempDir()
	writePlan(t, checkout, spreadBenchPlan)
	start := func() *proc {
		p := startProc(t, c.work, c.rt, "worker", "--temporal", c.srv.hostPort, "--task-queue", c.queue, "--blobs", c.blobs,
			"--log-format", "json", "--work-root", t.TempDir(), "--max-concurrent-steps", "10")
		waitOutput(t, p, "worker started", time.Minute)
		return p
	}
	var workers []*proc
	run := func(name string) (time.Duration, []string) {
		out := filepath.Join(t.TempDir(), "blackboard.json")
		began := time.Now()
		p := c.run(t, filepath.Join(checkout, "plan.yaml"), out, "--workdir", checkout)
		if code := p.wait(t, 5*time.Minute); code != 0 {
			t.Fatalf("%s: exit %d\n%s\nworkers:\n%s", name, code, p.out, workerLogs(workers))
		}
		took := time.Since(began)
		b := loadBoard(t, out)
		var views []string
		for _, s := range b.Steps() {
			views = append(views, stepView(s))
		}
		read := stepOf(t, b, "read")
		want := ""
		for i := range 30 {
			want += fmt.Sprintf("%d ", i)
		}
		if got := string(read.Result); !strings.Contains(got, want) {
			t.Errorf("%s: read %s; want every item's file", name, got)
		}
		t.Logf("%s: %v", name, took)
		return took, views
	}
	workers = append(workers, start())
	one, want := run("one worker")
	workers = append(workers, start(), start())
	three, got := run("three workers")
	sort.Strings(want)
	sort.Strings(got)
	if d := firstDiff(want, got); d != "" {
		t.Errorf("records differ between one worker and three: %s", d)
	}
	if three >= one {
		t.Errorf("three workers took %v, one %v; want the fan-out spread over the three", three, one)
	}
}

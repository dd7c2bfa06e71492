package temporal

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The figure in docs/benchmarks.md (A fan-out over one worker or three)
// comes from this test, run only when asked:
//
//	go test ./ -run TestBenchSpreadFanOut -v -timeout 30m -bench-temporal
var (
	benchItems = flag.Int("bench-items", 50, "TestBenchSpreadFanOut: the fan-out's items, each sleeping a second")
	benchSlots = flag.Int("bench-slots", 5, "TestBenchSpreadFanOut: --max-concurrent-steps of each worker (a host's capacity)")
)

// One fan-out of one-second items, on a queue served by one worker and
// on one served by three (each worker running at most -bench-slots steps
// at once: a step that sleeps costs no CPU, so without a bound one worker
// would run every item at once), rounds interleaved. Every run must
// succeed and its last step see every item's file.
func TestBenchSpreadFanOut(t *testing.T) {
	if !*benchTemporal {
		t.Skip("a benchmark: -bench-temporal")
	}
	c := newCluster(t, strings.Fields(*benchServer)...)
	plan := writePlan(t, c.work, fmt.Sprintf(`
version: 1
name: spread-bench
steps:
  - {label: each, type: command, for_each: '0..%d', max_concurrency: %d, run: "sleep 1; echo ${{ item }} > f${{ item }}.txt"}
  - {label: count, type: command, run: "ls f*.txt | wc -l"}
`, *benchItems-1, *benchItems))
	queues := map[int]string{}
	var workers []*proc
	for _, n := range []int{1, 3} {
		queues[n] = fmt.Sprintf("%s-%d", c.queue, n)
		for i := range n {
			p := startProc(t, c.work, c.rt, "worker", "--temporal", c.srv.hostPort, "--task-queue", queues[n], "--blobs", c.blobs,
				"--log-format", "json", "--work-root", t.TempDir(), "--host-id", fmt.Sprintf("q%d-w%d", n, i+1),
				"--max-concurrent-steps", fmt.Sprint(*benchSlots))
			waitOutput(t, p, "worker started", time.Minute)
			workers = append(workers, p)
		}
	}
	walls := map[int][]string{}
	for round := range *benchRounds {
		for _, n := range []int{1, 3} {
			out := filepath.Join(c.work, fmt.Sprintf("bb-%d-%d.json", n, round))
			start := time.Now()
			p := startProc(t, c.work, c.rt, "run", plan, "--temporal", c.srv.hostPort, "--task-queue", queues[n],
				"--blobs", c.blobs, "--out", out)
			if code := p.wait(t, 10*time.Minute); code != 0 {
				t.Fatalf("%d workers: exit %d\n%s\nworkers:\n%s", n, code, p.out, workerLogs(workers))
			}
			wall := time.Since(start)
			b := loadBoard(t, out)
			if count := stepOf(t, b, "count"); !strings.Contains(string(count.Result), fmt.Sprintf(`"stdout":"%d\n"`, *benchItems)) {
				t.Fatalf("%d workers: count %s; want %d files", n, count.Result, *benchItems)
			}
			hosts := itemHosts(b, "each")
			t.Logf("round %d, %d worker(s): %.1f s, items on %v", round+1, n, wall.Seconds(), hosts)
			walls[n] = append(walls[n], fmt.Sprintf("%.1f", wall.Seconds()))
		}
	}
	t.Logf("%d items of 1 s, %d steps at once a worker: one worker %s s; three workers %s s",
		*benchItems, *benchSlots, strings.Join(walls[1], ", "), strings.Join(walls[3], ", "))
}

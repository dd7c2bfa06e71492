package temporal

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// spreadHostsPlan seeds the workspace, fans out over twelve items that
// each read the seed, write a file of their own and (item 3) remove one,
// then reads the result: what the step after the fan-out sees is in its
// output. marks (%[1]s) is outside every workspace: each item and the
// reading step note there when they start.
const spreadHostsPlan = `
version: 1
name: spread-hosts
steps:
  - {label: seed, type: command, run: "mkdir -p out; echo base > out/base.txt; echo old > gone.txt"}
  - label: each
    type: command
    for_each: '0..11'
    max_concurrency: 12
    run: "echo item >> %[1]s/items; sleep %[2]d; echo ${{ item }}-$(cat out/base.txt) > out/${{ item }}.txt; if [ ${{ item }} = 3 ]; then rm gone.txt; fi"
  - label: read
    type: command
    run: "echo start >> %[1]s/read; sleep %[3]d; ls out | wc -l | tr -d ' '; cat out/*.txt | LC_ALL=C sort | tr '\n' ' '; test -e gone.txt && echo gone-kept || echo gone-removed"
`

// spreadWorkers starts n workers on c's queue, each a host of its own
// (host id wN, a work root of its own: nothing of a run's workspace is
// shared but the store), running at most limit steps at once.
func spreadWorkers(t *testing.T, c *cluster, n, limit int) (workers []*proc, roots []string) {
	for i := range n {
		root := t.TempDir()
		p := startProc(t, c.work, c.rt, "worker", "--temporal", c.srv.hostPort, "--task-queue", c.queue, "--blobs", c.blobs,
			"--log-format", "json", "--work-root", root, "--host-id", fmt.Sprintf("w%d", i+1),
			"--max-concurrent-steps", fmt.Sprint(limit))
		workers = append(workers, p)
		roots = append(roots, root)
	}
	for _, w := range workers {
		waitOutput(t, w, "worker started", time.Minute)
	}
	return workers, roots
}

// holder is the index of the live worker whose work root holds a copy of
// the run's workspace made after any copy of the dead ones (-1: none):
// the host the run is pinned to.
func holder(roots []string, dead map[int]bool, workflowPrefix string) int {
	for i, r := range roots {
		if dead[i] {
			continue
		}
		entries, _ := os.ReadDir(r)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), workflowPrefix) {
				return i
			}
		}
	}
	return -1
}

// itemHosts are the hosts a fan-out's item records name, sorted.
func itemHosts(b *board.Board, each string) []string {
	seen := map[string]bool{}
	for _, s := range b.Steps() {
		if strings.HasPrefix(s.Label, each+"[") && s.Host != "" {
			seen[s.Host] = true
		}
	}
	var out []string
	for h := range seen {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// wantRead is what the reading step prints when it sees every item's
// effects: the seed and twelve files, each made from the seed, and
// gone.txt removed by item 3.
func wantRead() string {
	lines := []string{"base"}
	for i := range 12 {
		lines = append(lines, fmt.Sprintf("%d-base", i))
	}
	sort.Strings(lines)
	return "13\n" + strings.Join(lines, " ") + " gone-removed\n"
}

// A pinned run's fan-out runs on every host of the pool (each worker
// takes at most 4 steps, the fan-out has 12 items), each item from the
// workspace the seed step left, and the step after it, on the run's
// host, sees every item's files and removal: the board is the one the
// same plan leaves in process, field for field.
func TestDevServerSpreadAcrossHosts(t *testing.T) {
	c := newCluster(t)
	workers, _ := spreadWorkers(t, c, 3, 4)
	marks := t.TempDir()
	src := fmt.Sprintf(spreadHostsPlan, marks, 1, 0)
	checkout := t.TempDir()
	plan := writePlan(t, checkout, src)
	out := filepath.Join(t.TempDir(), "blackboard.json")
	p := c.run(t, plan, out, "--workdir", checkout)
	if code := p.wait(t, 5*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s\nworkers:\n%s", code, p.out, workerLogs(workers))
	}
	got := loadBoard(t, out)
	if hosts := itemHosts(got, "each"); len(hosts) < 2 {
		t.Errorf("the fan-out's items ran on hosts %v; want more than one", hosts)
	}
	if read := stepOf(t, got, "read"); !strings.Contains(string(read.Result), jsonString(wantRead())) {
		t.Errorf("read after the fan-out: %s; want %q", read.Result, wantRead())
	}
	want, err := inProcess(t, src)
	if err != nil {
		t.Fatalf("in process: %v", err)
	}
	if d := sameCross(want, got); d != "" {
		t.Errorf("spread over three hosts vs in process: %s", d)
	}
}

// The host a run is pinned to is killed (SIGKILL) while the fan-out's
// items run, some of them on it; then the host the run moved to is
// killed while the step after the fan-out runs there. The items lost
// with the first run again elsewhere from the fan-out's base, the run
// moves twice, and the last host's step sees every item's effects: the
// board is the in-process one but for the attempts the kills cost.
func TestDevServerSpreadKilledHosts(t *testing.T) {
	spreadKilledHosts(t, newCluster(t))
}

// TestDevServerSpreadKilledHostsS3 is TestDevServerSpreadKilledHosts on
// an S3 bucket (a real S3 server, versitygw) as the store: the units'
// workspaces travel through the bucket, which ends up holding each
// item's own manifest, and the local store directory is never written.
func TestDevServerSpreadKilledHostsS3(t *testing.T) {
	c := newCluster(t) // builds the binaries before useCredentials sets a HOME of its own
	srv := startS3Server(t)
	srv.useCredentials(t)
	local := c.blobs
	c.blobs = srv.storeURL("spread-killed")
	spreadKilledHosts(t, c)
	if fi, _ := os.ReadDir(local); len(fi) != 0 {
		t.Errorf("the local store directory was written: %v", fi)
	}
	store, _, err := OpenStore(StoreOptions{Store: c.blobs}, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	// A unit's manifest is the fan-out's base and its item's file: no
	// other manifest names exactly one item's file.
	units := map[string]bool{}
	for _, k := range srv.objects(t, "spread-killed/") {
		name := filepath.Base(k)
		if validName(name) != nil {
			continue
		}
		m, err := LoadManifest(store, name)
		if err != nil || m.Workdir == "" {
			continue // not a manifest: a file's bytes or a board chunk
		}
		items := map[string]bool{} // a set: a manifest may list a file twice
		for _, f := range m.Files {
			if dir, file := path.Split(f.Path); dir == m.Workdir+"/out/" && file != "base.txt" {
				items[file] = true
			}
		}
		if len(items) == 1 {
			for file := range items {
				units[file] = true
			}
		}
	}
	for i := range 12 {
		if !units[fmt.Sprintf("%d.txt", i)] {
			t.Errorf("the bucket holds no manifest of item %d's unit; items with one: %v", i, units)
		}
	}
}

// spreadKilledHosts runs TestDevServerSpreadKilledHosts on c's store.
func spreadKilledHosts(t *testing.T, c *cluster) {
	workers, roots := spreadWorkers(t, c, 3, 4)
	marks := t.TempDir()
	src := fmt.Sprintf(spreadHostsPlan, marks, 8, 6)
	checkout := t.TempDir()
	plan := writePlan(t, checkout, src)
	out := filepath.Join(t.TempDir(), "blackboard.json")
	p := c.run(t, plan, out, "--workdir", checkout, "--heartbeat-timeout", "3s", "--host-timeout", "5s")
	dead := map[int]bool{}
	var killed []string
	kill := func(i int, why string) {
		t.Helper()
		if i < 0 {
			t.Fatalf("%s: no live host holds the run's workspace\n%s\nworkers:\n%s", why, p.out, workerLogs(workers))
		}
		t.Logf("killing w%d %s", i+1, why)
		if err := syscall.Kill(workers[i].cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		workers[i].wait(t, 10*time.Second)
		dead[i] = true
		killed = append(killed, fmt.Sprintf("w%d", i+1))
	}
	prefix := "runner-spread-hosts-"

	// Every worker runs items (4 at most each, 12 items): once all have
	// started, the run's host runs some of them.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		data, _ := os.ReadFile(filepath.Join(marks, "items"))
		if strings.Count(string(data), "item\n") >= 12 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fan-out's items did not all start: %q\n%s\nworkers:\n%s", data, p.out, workerLogs(workers))
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // past the items' first heartbeat
	kill(holder(roots, dead, prefix), "mid-fan-out")

	waitFile(t, filepath.Join(marks, "read"), 3*time.Minute)
	time.Sleep(2 * time.Second) // past the step's first heartbeat
	kill(holder(roots, dead, prefix), "during the step after the fan-out")

	if code := p.wait(t, 5*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s\nworkers:\n%s", code, p.out, workerLogs(workers))
	}
	got := loadBoard(t, out)
	read := stepOf(t, got, "read")
	if !strings.Contains(string(read.Result), jsonString(wantRead())) {
		t.Errorf("read after the kills: %s; want %q", read.Result, wantRead())
	}
	if read.Attempts != 2 {
		t.Errorf("read: attempts %d; want 2 (one lost with its host)", read.Attempts)
	}
	lost := 0
	for _, s := range got.Steps() {
		if strings.HasPrefix(s.Label, "each[") && s.Attempts > 1 {
			lost++
		}
	}
	if lost == 0 {
		t.Errorf("no item was run again; want those lost with the first host")
	}
	// The run's host ran the seed, and the last live one the read.
	if seed := stepOf(t, got, "seed"); seed.Host != killed[0] || read.Host == killed[0] || read.Host == killed[1] || read.Host == "" {
		t.Errorf("seed ran on %s, read on %s; killed %v: want the seed on the first killed, the read on the live host", seed.Host, read.Host, killed)
	}
	if data, _ := os.ReadFile(filepath.Join(marks, "read")); strings.Count(string(data), "start") != 2 {
		t.Errorf("read started %q; want twice (once on each host)", data)
	}

	// In process, with the attempts the kills cost set aside.
	want, err := inProcess(t, src)
	if err != nil {
		t.Fatalf("in process: %v", err)
	}
	if d := sameCross(want, got, func(s *board.StepRecord) { s.Attempts = 0 }); d != "" {
		t.Errorf("killed hosts vs in process: %s", d)
	}
}

// jsonString is s as it reads inside a JSON string.
func jsonString(s string) string {
	return strings.ReplaceAll(s, "\n", `\n`)
}

// spreadGroupPlan seeds the workspace, then runs a parallel group whose
// six single-step children each write a file of their own from the seed
// (c3 also removes one), beside a for_each of four two-step items, each
// step of an item reading what the one before it wrote; the step after
// the group reads the result.
const spreadGroupPlan = `
version: 1
name: spread-group-hosts
steps:
  - {label: seed, type: command, run: "mkdir -p out; echo base > out/base.txt; echo old > gone.txt"}
  - label: grp
    parallel:
      - {label: c0, type: command, run: "sleep 2; echo c0-$(cat out/base.txt) > out/c0.txt"}
      - {label: c1, type: command, run: "sleep 2; echo c1-$(cat out/base.txt) > out/c1.txt"}
      - {label: c2, type: command, run: "sleep 2; echo c2-$(cat out/base.txt) > out/c2.txt"}
      - {label: c3, type: command, run: "sleep 2; echo c3-$(cat out/base.txt) > out/c3.txt; rm gone.txt"}
      - {label: c4, type: command, run: "sleep 2; echo c4-$(cat out/base.txt) > out/c4.txt"}
      - {label: c5, type: command, run: "sleep 2; echo c5-$(cat out/base.txt) > out/c5.txt"}
      - label: each
        for_each: '0..3'
        steps:
          - {label: w, type: command, run: "sleep 1; echo i${{ item }} > out/i${{ item }}.txt"}
          - {label: r, type: command, run: "echo again-$(cat out/i${{ item }}.txt) >> out/i${{ item }}.txt"}
  - {label: read, type: command, run: "ls out | wc -l | tr -d ' '; cat out/*.txt | LC_ALL=C sort | tr '\n' ' '; test -e gone.txt && echo gone-kept || echo gone-removed"}
`

// A pinned run's parallel group spreads its children over the pool (and
// the for_each inside it its items, each item's two steps one unit):
// the children's records name more than one host, the step after the
// group sees every child's and item's files and the removal, and the
// board is the one the same plan leaves in process, field for field.
func TestDevServerSpreadGroupAcrossHosts(t *testing.T) {
	c := newCluster(t)
	workers, _ := spreadWorkers(t, c, 3, 3)
	checkout := t.TempDir()
	plan := writePlan(t, checkout, spreadGroupPlan)
	out := filepath.Join(t.TempDir(), "blackboard.json")
	p := c.run(t, plan, out, "--workdir", checkout)
	if code := p.wait(t, 5*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s\nworkers:\n%s", code, p.out, workerLogs(workers))
	}
	got := loadBoard(t, out)
	hosts := map[string]bool{}
	for _, s := range got.Steps() {
		if len(s.Label) == 2 && s.Label[0] == 'c' && s.Host != "" {
			hosts[s.Host] = true
		}
	}
	if len(hosts) < 2 {
		t.Errorf("the group's children ran on hosts %v; want more than one", hosts)
	}
	want := "11\nagain-i0 again-i1 again-i2 again-i3 base c0-base c1-base c2-base c3-base c4-base c5-base i0 i1 i2 i3 gone-removed\n"
	if read := stepOf(t, got, "read"); !strings.Contains(string(read.Result), jsonString(want)) {
		t.Errorf("read after the group: %s; want %q", read.Result, want)
	}
	inProc, err := inProcess(t, spreadGroupPlan)
	if err != nil {
		t.Fatalf("in process: %v", err)
	}
	if d := sameCross(inProc, got); d != "" {
		t.Errorf("spread over three hosts vs in process: %s", d)
	}
}

package temporal

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/testutil/testtool"
)

// inputPlan asks a person, then uses the answer in a file it writes and
// reads back in a later step (so a host change between them would show).
const inputPlan = `
version: 1
name: asked
steps:
  - label: ask
    type: input
    prompt: "Which colour?"
    form: {properties: {colour: {type: string}}, required: [colour]}
  - {label: write, type: command, run: "echo ${{ steps.ask.output.colour }} > colour.txt"}
  - {label: read, type: command, run: "cat colour.txt"}
`

// namespaced is how a worker gets a mount namespace of its own here:
// unshare(1) with CAP_SYS_ADMIN (root), else in a user namespace. The
// probe mounts a tmpfs, as the workers will. "" (and a skip, or a
// failure under CI=true) where neither works.
func namespaced(t *testing.T) []string {
	t.Helper()
	bin, err := exec.LookPath("unshare")
	if err != nil {
		testtool.Missing(t, "unshare (util-linux)", "apt-get install util-linux")
	}
	dir := t.TempDir()
	for _, pre := range [][]string{
		{bin, "--mount", "--propagation", "private"},
		{bin, "--user", "--map-root-user", "--mount", "--propagation", "private"},
	} {
		args := append(append([]string{}, pre[1:]...), "sh", "-c", `mount -t tmpfs tmpfs "$1"`, "sh", dir)
		if out, err := exec.Command(pre[0], args...).CombinedOutput(); err == nil {
			return pre
		} else {
			t.Logf("%v: %v %s", pre, err, out)
		}
	}
	testtool.Missing(t, "mount namespaces (CAP_SYS_ADMIN, or unprivileged user namespaces)",
		"run as root, or enable user namespaces (sysctl kernel.unprivileged_userns_clone=1)")
	return nil
}

// The acceptance, the setup docs/temporal.md "Many hosts" gives a
// user with three machines: a Temporal server, one shared store, and three
// workers that share nothing else. Each worker runs in a mount namespace of
// its own, with a tmpfs over its work root (its own disk) and one over the
// client's checkout (so no worker can read the plan at the client's path).
// The flagship example, a for_each fan-out over files() and a plan with
// an input answered through the CLI all succeed; every run's steps ran on
// one host (its workspace is on exactly one worker's disk); the saved
// boards replay offline and equal those of local runs of the same plans;
// --sync-back brings the run's files home.
//
// Here the workers see no cgroup v2 (a tmpfs over each cgroup2 mount), so
// a step's processes are tracked by their process group, and the worker
// killed mid-step (the last case) is cleaned up after by its watchdog's
// process-group kill; TestDevServerThreeHostsS3 keeps the cgroups where
// the host has them (cgroup.kill).
func TestDevServerThreeHosts(t *testing.T) {
	pre := namespaced(t)
	c := newCluster(t)
	threeHosts(t, pre, c, cgroup2Mounts(t)...)
}

// cgroup2Mounts lists where cgroup v2 is mounted on this host.
func cgroup2Mounts(t *testing.T) []string {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(mi), "\n") {
		left, right, ok := strings.Cut(l, " - ")
		if f := strings.Fields(left); ok && len(f) >= 5 && strings.HasPrefix(right, "cgroup2 ") {
			out = append(out, strings.ReplaceAll(f[4], `\040`, " "))
		}
	}
	return out
}

// TestDevServerThreeHostsS3 is TestDevServerThreeHosts on the store a user
// with three machines has (docs/temporal.md "Three machines, exactly"): an
// S3 bucket on a real S3 server (versitygw), the credentials in the
// environment of the client and each worker. No directory is shared: each
// worker has a tmpfs over the local store directory too, and the runs
// write nothing there.
func TestDevServerThreeHostsS3(t *testing.T) {
	pre := namespaced(t)
	c := newCluster(t)
	srv := startS3Server(t)
	// The flagship's go test builds with go's own build cache, read before
	// useCredentials gives the test a HOME of its own (a cold cache there
	// takes minutes).
	t.Setenv("GOCACHE", strings.TrimSpace(string(must(exec.Command("go", "env", "GOCACHE").Output()))))
	srv.useCredentials(t)
	local := c.blobs
	c.blobs = srv.storeURL("three-hosts")
	threeHosts(t, pre, c, local)
	if fi, _ := os.ReadDir(local); len(fi) != 0 {
		t.Errorf("the local store directory was written: %v", fi)
	}
	blobs := 0
	for _, k := range srv.objects(t, "three-hosts/") {
		if validName(filepath.Base(k)) == nil {
			blobs++
		}
	}
	if blobs < 10 {
		t.Errorf("the bucket holds %d blobs; want the runs' board chunks, plans and workspaces", blobs)
	}
}

// threeHosts runs the three plans on three namespaced workers sharing c's
// store, then kills one mid-step; hide are directories each worker gets a
// tmpfs over.
func threeHosts(t *testing.T, pre []string, c *cluster, hide ...string) {
	t.Setenv("RUNNER_TEMPORAL", c.rt)

	checkout := t.TempDir() // the client's: hidden from the workers
	repo, _ := filepath.Abs("..")
	for _, ex := range []string{"fix-tests", "summarize-files"} {
		if err := os.CopyFS(filepath.Join(checkout, "examples", ex), os.DirFS(filepath.Join(repo, "examples", ex))); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(checkout, "asked"), 0o755)
	writePlan(t, filepath.Join(checkout, "asked"), inputPlan)
	// The fix-tests test step builds Go with the test's own build cache.
	gocache := strings.TrimSpace(string(must(exec.Command("go", "env", "GOCACHE").Output())))
	workRoot := filepath.Join(t.TempDir(), "work") // the same path on every host, a disk of its own on each
	os.MkdirAll(workRoot, 0o755)
	var workers []*proc
	for i := range 3 {
		home := t.TempDir()
		mounts := append([]string{workRoot, checkout}, hide...)
		args := append(append([]string{}, pre[1:]...), "sh", "-c",
			`for d; do [ "$d" = -- ] && break; mount -t tmpfs tmpfs "$d" || exit 1; shift; done; shift; exec "$@"`, "sh")
		args = append(append(args, mounts...), "--",
			c.rt, "worker", "--temporal", c.srv.hostPort, "--task-queue", c.queue, "--blobs", c.blobs,
			"--work-root", workRoot, "--host-id", fmt.Sprintf("host%d", i+1), "--log-format", "json")
		env := append(os.Environ(), "HOME="+home, "GOCACHE="+gocache, "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local", "GOTELEMETRY=off")
		workers = append(workers, startProcEnv(t, c.work, env, pre[0], args...))
	}
	for _, w := range workers {
		waitOutput(t, w, "worker started", time.Minute)
	}

	type runCase struct {
		name, plan string
		answer     []string // runner answer's arguments, once the run waits
	}
	cases := []runCase{
		{"flagship", "examples/fix-tests/plan.yaml", nil},
		{"fan-out", "examples/summarize-files/plan.yaml", nil},
		{"input", "asked/plan.yaml", []string{"--step", "ask", "--set", "colour=teal"}},
	}
	for _, rc := range cases {
		t.Run(rc.name, func(t *testing.T) {
			out := filepath.Join(checkout, "out", rc.name, "blackboard.json")
			back := filepath.Join(t.TempDir(), "back")
			p := startProc(t, checkout, c.rt, "run", filepath.Join(checkout, rc.plan), "--temporal", c.srv.hostPort,
				"--task-queue", c.queue, "--blobs", c.blobs, "--out", out, "--workdir", checkout, "--sync-back", back)
			if rc.answer != nil {
				waitOutput(t, p, "runner answer", 2*time.Minute)
				if code, got := runIn(t, checkout, c.runner, append([]string{"answer", out}, rc.answer...)...); code != 0 {
					t.Fatalf("answer: exit %d\n%s", code, got)
				}
			}
			if code := p.wait(t, 5*time.Minute); code != 0 {
				t.Fatalf("run on three hosts: exit %d\n%s\nworkers:\n%s", code, p.out, workerLogs(workers))
			}
			got := loadBoard(t, out)
			runID := got.Run().ID

			// One host has the run's workspace, the others none.
			var on []string
			for i, w := range workers {
				if _, err := os.Stat(filepath.Join(fmt.Sprintf("/proc/%d/root", w.cmd.Process.Pid), workRoot, WorkflowIDOf(got.Run()))); err == nil {
					on = append(on, fmt.Sprintf("host%d", i+1))
				}
			}
			if len(on) != 1 {
				t.Errorf("the run's workspace is on %v; want one host", on)
			}
			if !strings.Contains(p.out.String(), "ran on host") {
				t.Errorf("the run does not say where it ran:\n%s", p.out)
			}

			// As a local run of the same plan, step for step.
			localWD := t.TempDir()
			for _, ex := range []string{"examples", "asked"} {
				os.CopyFS(filepath.Join(localWD, ex), os.DirFS(filepath.Join(checkout, ex)))
			}
			// The saved run in a directory of its own: a sandboxed step may
			// write the workdir, and runner keeps its files out of its reach.
			local := filepath.Join(t.TempDir(), "local.json")
			args := []string{"run", filepath.Join(localWD, rc.plan), "--out", local, "--workdir", localWD, "-q"}
			if rc.answer != nil {
				// Locally the input saves the run as waiting; the answer
				// resumes it.
				runIn(t, localWD, c.runner, args...)
				args = append([]string{"answer", local, "--resume"}, rc.answer...)
			}
			if code, got := runIn(t, localWD, c.runner, args...); code != 0 {
				t.Fatalf("local run: exit %d\n%s", code, got)
			}
			want := loadBoard(t, local)
			gs, ge := crossViews(got)
			ws, we := crossViews(want)
			// The runs' ids differ (each names its own directory).
			sameID := func(s string) string { return strings.ReplaceAll(s, want.Run().ID, runID) }
			for i := range ws {
				ws[i].Result = []byte(sameID(string(ws[i].Result)))
				for k, v := range ws[i].Inputs {
					ws[i].Inputs[k] = sameID(v)
				}
			}
			// A step's inputs name the workdir it ran in: its host's copy
			// of the run's workspace (WORKROOT/<workflow id>/DIR), a
			// per-host path, read as the client's workdir.
			hostCopy := regexp.MustCompile(`/[^\s"']*/` + regexp.QuoteMeta(WorkflowIDOf(got.Run())) + `/[^/\s"']+`)
			for i := range gs {
				for k, v := range gs[i].Inputs {
					gs[i].Inputs[k] = hostCopy.ReplaceAllString(v, checkout)
				}
			}
			if d := sameStepsIn(ws, localWD, gs, checkout); d != "" {
				t.Errorf("three hosts vs local: %s", d)
			}
			wantEntries := entriesViewIn(we, localWD)
			for i := range wantEntries {
				wantEntries[i] = sameID(wantEntries[i])
			}
			if d := firstDiff(wantEntries, entriesViewIn(ge, checkout)); d != "" {
				t.Errorf("entries, three hosts vs local: %s", d)
			}
			if code, got := runIn(t, checkout, c.runner, "replay", out, "--offline"); code != 0 || !strings.Contains(got, "matched") {
				t.Errorf("replay --offline: exit %d\n%s", code, got)
			}
			// The run's files came back.
			own := filepath.Join(back, ".runner", "runs", runID)
			switch rc.name {
			case "flagship":
				if data, err := os.ReadFile(filepath.Join(own, "project", "stats.go")); err != nil || !strings.Contains(string(data), "if len(xs) == 0") {
					t.Errorf("--sync-back: the fixed project is not back (%v):\n%s", err, data)
				}
			case "input":
				if data, err := os.ReadFile(filepath.Join(back, "colour.txt")); err != nil || strings.TrimSpace(string(data)) != "teal" {
					t.Errorf("--sync-back: colour.txt = %q, %v", data, err)
				}
			}
		})
	}
	// Last: each leaves one more host dead.
	t.Run("killed worker", func(t *testing.T) { killedHost(t, c, workers, checkout, workRoot) })
	t.Run("killed after a fan-out", func(t *testing.T) { killedAfterFanOut(t, c, workers, checkout, workRoot) })
}

// killedAfterFanOut: a for_each of fanOutItems items each writes a file
// into the workspace, then a step reads them all; the host the run is
// pinned to is killed during that step. The items finish on the host in
// one order and reach the workflow in another, so the workspace the run
// moves with must be the newest the host put back, not the last the
// workflow heard of: the step, run again on another host, finds every
// file (it fails, and the run with it, on fewer), and --sync-back brings
// them all home.
func killedAfterFanOut(t *testing.T, c *cluster, workers []*proc, checkout, workRoot string) {
	const fanOutItems = 50
	marks := t.TempDir()
	dir := filepath.Join(checkout, "fan-in")
	os.MkdirAll(dir, 0o755)
	plan := writePlan(t, dir, fmt.Sprintf(`
version: 1
name: fan-in
steps:
  - {label: each, type: command, for_each: '0..%[2]d', max_concurrency: 8, run: "echo ${{ item }} > f${{ item }}.txt"}
  - label: read
    type: command
    run: "echo start $$ >> %[1]s/marks; sleep 6; n=$(ls f*.txt | wc -l); echo $n; test $n -eq %[3]d"
`, marks, fanOutItems-1, fanOutItems))
	hostRoot := func(w *proc) string { return filepath.Join(fmt.Sprintf("/proc/%d/root", w.cmd.Process.Pid), workRoot) }
	out := filepath.Join(checkout, "out", "fan-in", "blackboard.json")
	back := filepath.Join(t.TempDir(), "back")
	run := startProc(t, checkout, c.rt, "run", plan, "--temporal", c.srv.hostPort, "--task-queue", c.queue, "--blobs", c.blobs,
		"--out", out, "--workdir", checkout, "--heartbeat-timeout", "3s", "--host-timeout", "5s", "--sync-back", back)
	started := strings.Fields(waitFile(t, filepath.Join(marks, "marks"), 3*time.Minute))
	if len(started) != 2 || started[0] != "start" {
		t.Fatalf("marks = %q; want one start", started)
	}
	// The host running the step: the one whose namespace it is in.
	stepNS, err := os.Readlink("/proc/" + started[1] + "/ns/mnt")
	if err != nil {
		t.Fatalf("the reading step (pid %s): %v", started[1], err)
	}
	pinned := -1
	for i, w := range workers {
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", w.cmd.Process.Pid)); err == nil && ns == stepNS {
			pinned = i
		}
	}
	if pinned < 0 {
		t.Fatalf("the reading step runs on no live host\n%s", workerLogs(workers))
	}
	host := fmt.Sprintf("host%d", pinned+1)
	if entries, _ := os.ReadDir(hostRoot(workers[pinned])); len(entries) == 0 {
		t.Errorf("%s runs the step but has no workspace", host)
	}
	time.Sleep(2 * time.Second) // past the step's first heartbeat
	if err := syscall.Kill(workers[pinned].cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	workers[pinned].wait(t, 10*time.Second)
	code := run.wait(t, 3*time.Minute)
	b := loadBoard(t, out)
	read := lastRecord(b, "read")
	if code != 0 || read.Status != "succeeded" {
		t.Fatalf("run after %s was killed: exit %d, read %s\n%s\nworkers:\n%s", host, code, read.Status, run.out, workerLogs(workers))
	}
	if s := stepOf(t, b, "read"); !strings.Contains(string(s.Result), fmt.Sprintf(`"stdout":"%d\n"`, fanOutItems)) {
		t.Errorf("read on the new host: %s; want all %d files", s.Result, fanOutItems)
	}
	if read.Attempts != 2 {
		t.Errorf("read: attempts %d; want 2 (one lost with %s)", read.Attempts, host)
	}
	if want := "(host " + host + " stopped taking the run's tasks)"; !strings.Contains(run.out.String(), want) {
		t.Errorf("the run's output lacks %q:\n%s", want, run.out)
	}
	for i := range fanOutItems {
		if data, err := os.ReadFile(filepath.Join(back, fmt.Sprintf("f%d.txt", i))); err != nil || string(data) != fmt.Sprintf("%d\n", i) {
			t.Errorf("--sync-back f%d.txt = %q, %v", i, data, err)
		}
	}
	if code, got := runIn(t, checkout, c.runner, "replay", out, "--offline"); code != 0 || !strings.Contains(got, "matched") {
		t.Errorf("replay --offline: exit %d\n%s", code, got)
	}
}

// killedHost is the acceptance's last clause: one worker is killed
// (SIGKILL, the worker process in its mount namespace) in the middle of a
// step, and its orphan does not run on. The step writes a start mark to a
// directory outside every workspace, sleeps, then writes an end mark; the
// worker killed is the one whose disk has the run's workspace (the host
// the run is pinned to), and the step's process is checked to be in its
// namespace. The run moves to another host with the workspace the first
// step left, succeeds and replays offline; the dead host's step never
// writes its end mark (the test waits past its sleep), and no process of
// the dead host's namespace is left (its step, the step's children, the
// watchdog).
func killedHost(t *testing.T, c *cluster, workers []*proc, checkout, workRoot string) {
	marks := t.TempDir() // outside every workspace; not hidden from the workers
	dir := filepath.Join(checkout, "killed")
	os.MkdirAll(dir, 0o755)
	plan := writePlan(t, dir, fmt.Sprintf(`
version: 1
name: killed
steps:
  - {label: first, type: command, run: "echo from-first > a.txt"}
  - {label: long, type: command, run: "echo start $$ >> %[1]s/marks; sleep 6; echo end $$ >> %[1]s/marks; cat a.txt"}
  - {label: last, type: command, run: "cat a.txt"}
`, marks))
	// The hosts' workspaces before the run: the run's is the one added.
	hostRoot := func(w *proc) string { return filepath.Join(fmt.Sprintf("/proc/%d/root", w.cmd.Process.Pid), workRoot) }
	before := make([]map[string]bool, len(workers))
	for i, w := range workers {
		before[i] = map[string]bool{}
		entries, _ := os.ReadDir(hostRoot(w))
		for _, e := range entries {
			before[i][e.Name()] = true
		}
	}
	out := filepath.Join(checkout, "out", "killed", "blackboard.json")
	run := startProc(t, checkout, c.rt, "run", plan, "--temporal", c.srv.hostPort, "--task-queue", c.queue, "--blobs", c.blobs,
		"--out", out, "--workdir", checkout, "--heartbeat-timeout", "3s", "--host-timeout", "5s")
	started := strings.Fields(waitFile(t, filepath.Join(marks, "marks"), 2*time.Minute))
	if len(started) != 2 || started[0] != "start" {
		t.Fatalf("marks = %q; want one start", started)
	}
	pid := started[1]
	pinned := -1
	for i, w := range workers {
		entries, _ := os.ReadDir(hostRoot(w))
		for _, e := range entries {
			if !before[i][e.Name()] {
				pinned = i
			}
		}
	}
	if pinned < 0 {
		t.Fatalf("no host made the run's workspace\n%s", workerLogs(workers))
	}
	dead := workers[pinned]
	host := fmt.Sprintf("host%d", pinned+1)
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", dead.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if stepNS, err := os.Readlink("/proc/" + pid + "/ns/mnt"); err != nil || stepNS != ns {
		t.Fatalf("the step (pid %s) runs in mount namespace %q (%v); want %s's, %s", pid, stepNS, err, host, ns)
	}
	// Past the step's first heartbeat (half the heartbeat timeout), so the
	// lost attempt is counted; well before its end mark.
	time.Sleep(2 * time.Second)
	if err := syscall.Kill(dead.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	dead.wait(t, 10*time.Second)
	// The watchdog acts at once; a second later the step (asleep for 4
	// more) must be gone, and every other process of the dead host.
	time.Sleep(time.Second)
	if left := inNamespace(ns); len(left) > 0 {
		t.Errorf("processes of the killed host %s survive it: %s", host, strings.Join(left, "; "))
	}

	if code := run.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("run after %s was killed: exit %d\n%s\nworkers:\n%s", host, code, run.out, workerLogs(workers))
	}
	// The orphan's sleep ended long ago (the retry waited the heartbeat
	// and host timeouts); give it the rest of it anyway.
	waitUntil := time.Now().Add(7 * time.Second)
	time.Sleep(time.Until(waitUntil))
	lines := strings.Split(strings.TrimSpace(string(must(os.ReadFile(filepath.Join(marks, "marks"))))), "\n")
	var retry string
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "start" {
			retry = f[1]
		}
	}
	if slices.Contains(lines, "end "+pid) {
		t.Errorf("the killed host's step (pid %s) ran on to its end: marks %q", pid, lines)
	}
	if retry == "" || retry == pid || !slices.Contains(lines, "end "+retry) {
		t.Errorf("marks %q; want the step started again (another pid) and ended", lines)
	}
	if left := inNamespace(ns); len(left) > 0 {
		t.Errorf("processes of the killed host %s survive it: %s", host, strings.Join(left, "; "))
	}

	b := loadBoard(t, out)
	if got := runSummary(b); got != "first:succeeded long:succeeded last:succeeded" {
		t.Errorf("steps: %s", got)
	}
	if s := stepOf(t, b, "long"); !strings.Contains(string(s.Result), `"from-first\n"`) {
		t.Errorf("long on the new host: %s; want the file the first step wrote on the dead one", s.Result)
	}
	if rec := lastRecord(b, "long"); rec.Attempts != 2 {
		t.Errorf("long: attempts %d; want 2 (one lost with %s)", rec.Attempts, host)
	}
	if want := "(host " + host + " stopped taking the run's tasks)"; !strings.Contains(run.out.String(), want) {
		t.Errorf("the run's output lacks %q:\n%s", want, run.out)
	}
	if code, got := runIn(t, checkout, c.runner, "replay", out, "--offline"); code != 0 || !strings.Contains(got, "matched") {
		t.Errorf("replay --offline: exit %d\n%s", code, got)
	}
}

// inNamespace lists the live processes in mount namespace ns (zombies,
// which have none left, aside).
func inNamespace(ns string) []string {
	var left []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if got, err := os.Readlink("/proc/" + e.Name() + "/ns/mnt"); err != nil || got != ns {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		left = append(left, e.Name()+" "+strings.ReplaceAll(strings.TrimSpace(string(cmdline)), "\x00", " "))
	}
	return left
}

// startProcEnv is startProc with the process's environment.
func startProcEnv(t *testing.T, dir string, env []string, bin string, args ...string) *proc {
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	p := &proc{cmd: cmd, out: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
			}
		}
	})
	return p
}

func runIn(t *testing.T, dir, bin string, args ...string) (int, string) {
	t.Helper()
	p := startProc(t, dir, bin, args...)
	return p.wait(t, 3*time.Minute), p.out.String()
}

func workerLogs(ws []*proc) string {
	var b strings.Builder
	for i, w := range ws {
		fmt.Fprintf(&b, "--- host%d\n%s\n", i+1, w.out)
	}
	return b.String()
}

// A run's host dies in the middle of a step: the step's heartbeats stop,
// its retry waits on the dead host's queue past --host-timeout, and the
// run is pinned to the other host, which makes the workspace from the
// snapshot the last finished step left (the file the first step wrote is
// there). The run succeeds and says where it ran and why it moved.
func TestDevServerRepinWhenHostDies(t *testing.T) {
	c := newCluster(t)
	roots := map[string]string{"h1": t.TempDir(), "h2": t.TempDir()}
	workers := map[string]*proc{}
	for _, h := range []string{"h1", "h2"} {
		workers[h] = startProc(t, c.work, c.rt, "worker", "--temporal", c.srv.hostPort, "--task-queue", c.queue, "--blobs", c.blobs,
			"--log-format", "json", "--host-id", h, "--work-root", roots[h])
		waitOutput(t, workers[h], "worker started", time.Minute)
	}
	marks := t.TempDir() // outside every workspace: where the test sees the step start
	checkout := t.TempDir()
	plan := writePlan(t, checkout, fmt.Sprintf(`
version: 1
steps:
  - {label: first, type: command, run: "echo from-first > a.txt"}
  - {label: long, type: command, run: "echo start >> %s/long; sleep 4; cat a.txt"}
  - {label: last, type: command, run: "cat a.txt; echo last >> a.txt"}
`, marks))
	out := filepath.Join(checkout, "bb.json")
	back := t.TempDir()
	run := startProc(t, checkout, c.rt, "run", plan, "--temporal", c.srv.hostPort, "--task-queue", c.queue, "--blobs", c.blobs,
		"--out", out, "--heartbeat-timeout", "2s", "--host-timeout", "4s", "--sync-back", back)
	waitFile(t, filepath.Join(marks, "long"), time.Minute)
	var first string
	for h, root := range roots {
		if entries, _ := os.ReadDir(root); len(entries) > 0 {
			first = h
		}
	}
	if first == "" {
		t.Fatal("no host has the run's workspace")
	}
	other := map[string]string{"h1": "h2", "h2": "h1"}[first]
	workers[first].cmd.Process.Kill()
	workers[first].cmd.Wait()
	if code := run.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, run.out, workers[other].out)
	}
	b := loadBoard(t, out)
	if got := runSummary(b); got != "first:succeeded long:succeeded last:succeeded" {
		t.Errorf("steps: %s", got)
	}
	if s := stepOf(t, b, "long"); !strings.Contains(string(s.Result), `"stdout":"from-first\n"`) {
		t.Errorf("long on the new host: %s; want the file the first step wrote on the old one", s.Result)
	}
	for _, want := range []string{"ran on host " + first + " (first step)", "ran on host " + other + " (host " + first + " stopped taking the run's tasks)"} {
		if !strings.Contains(run.out.String(), want) {
			t.Errorf("the run's output lacks %q:\n%s", want, run.out)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(back, "a.txt")); string(data) != "from-first\nlast\n" {
		t.Errorf("--sync-back a.txt = %q", data)
	}
}

// With the default heartbeat and host timeouts, a host killed (SIGKILL)
// in the middle of a step loses its run within a minute: the run moves to
// the other host and succeeds, each step's record names the host that ran
// it, and the run's output says where its steps ran and when they moved.
func TestDevServerDeadHostNoticedWithinAMinute(t *testing.T) {
	c := newCluster(t)
	roots := map[string]string{"h1": t.TempDir(), "h2": t.TempDir()}
	workers := map[string]*proc{}
	for _, h := range []string{"h1", "h2"} {
		workers[h] = startProc(t, c.work, c.rt, "worker", "--temporal", c.srv.hostPort, "--task-queue", c.queue, "--blobs", c.blobs,
			"--log-format", "json", "--host-id", h, "--work-root", roots[h])
		waitOutput(t, workers[h], "worker started", time.Minute)
	}
	marks := t.TempDir()
	checkout := t.TempDir()
	plan := writePlan(t, checkout, fmt.Sprintf(`
version: 1
steps:
  - {label: first, type: command, run: "echo from-first > a.txt"}
  - {label: long, type: command, run: "echo start >> %s/long; sleep 5; cat a.txt"}
  - {label: last, type: command, run: "cat a.txt"}
`, marks))
	out := filepath.Join(checkout, "bb.json")
	run := startProc(t, checkout, c.rt, "run", plan, "--temporal", c.srv.hostPort, "--task-queue", c.queue, "--blobs", c.blobs, "--out", out)
	waitFile(t, filepath.Join(marks, "long"), time.Minute)
	var dead string
	for h, root := range roots {
		if entries, _ := os.ReadDir(root); len(entries) > 0 {
			dead = h
		}
	}
	if dead == "" {
		t.Fatal("no host has the run's workspace")
	}
	other := map[string]string{"h1": "h2", "h2": "h1"}[dead]
	time.Sleep(2 * time.Second) // past the step's first heartbeat
	if err := syscall.Kill(workers[dead].cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	workers[dead].cmd.Wait()
	code := run.wait(t, 3*time.Minute)
	took := time.Since(killed)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, run.out, workers[other].out)
	}
	if took > time.Minute {
		t.Errorf("the run ended %s after its host was killed; want within a minute with the default timeouts", took.Round(time.Second))
	}
	t.Logf("the run ended %s after its host was killed", took.Round(time.Second))
	b := loadBoard(t, out)
	if got := runSummary(b); got != "first:succeeded long:succeeded last:succeeded" {
		t.Errorf("steps: %s", got)
	}
	for label, want := range map[string]string{"first": dead, "long": other, "last": other} {
		if got := stepOf(t, b, label).Host; got != want {
			t.Errorf("%s's record: host %q, want %q", label, got, want)
		}
	}
	for _, want := range []string{"first succeeded", "ms on " + dead, "steps run on host " + other + " from long (before it, on host " + dead + ")",
		"ran on host " + other + " (host " + dead + " stopped taking the run's tasks)"} {
		if !strings.Contains(run.out.String(), want) {
			t.Errorf("the run's output lacks %q:\n%s", want, run.out)
		}
	}
}

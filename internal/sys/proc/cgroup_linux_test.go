package proc

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/testutil/testtool"
)

// TestStepRunsInItsOwnCgroup: a step's processes are in a cgroup of their
// own, made under runner's, left with no process when the step ends, also
// when it keeps a background process (which goes back to runner's own
// cgroup, alive, out of the watchdog's reach).
func TestStepRunsInItsOwnCgroup(t *testing.T) {
	parent, why := stepsCgroupDir()
	if parent == "" {
		testtool.Missing(t, "a writable cgroup v2", "run the tests as root, or in a delegated cgroup: "+why)
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	ownPath := filepath.Clean(strings.TrimPrefix(ownLine(string(own)), "0::"))
	for _, keep := range []bool{false, true} {
		r := run(t, Spec{Script: "cat /proc/self/cgroup; sleep 300 >/dev/null 2>&1 & echo $!", KeepBackground: keep, Grace: time.Second})
		var line string
		for _, l := range strings.Split(r.Stdout.Text, "\n") {
			if strings.HasPrefix(l, "0::") {
				line = l
			}
		}
		stepPath := strings.TrimPrefix(line, "0::")
		rel, err := filepath.Rel(ownPath, stepPath)
		if !strings.HasPrefix(filepath.Base(stepPath), "runner-") || err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			t.Errorf("keep %v: the step ran in %q, not below runner's cgroup %q", keep, line, ownLine(string(own)))
		}
		if procs, err := os.ReadFile(filepath.Join(parent, rel, "cgroup.procs")); err == nil && len(strings.TrimSpace(string(procs))) > 0 {
			t.Errorf("keep %v: processes are left in the step's cgroup: %s", keep, procs)
		}
		pids := readPids(t, r.Stdout.Text)
		pid := pids[len(pids)-1]
		if keep {
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			if !running(pid) {
				t.Errorf("the kept process %d was ended", pid)
			}
			if cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid)); filepath.Clean(strings.TrimPrefix(ownLine(string(cg)), "0::")) != ownPath {
				t.Errorf("the kept process is in %q, not runner's own cgroup %q", ownLine(string(cg)), ownPath)
			}
		} else {
			assertGone(t, []int{pid})
		}
	}
}

func ownLine(cg string) string {
	for _, l := range strings.Split(cg, "\n") {
		if strings.HasPrefix(l, "0::") {
			return l
		}
	}
	return ""
}

// TestFindCgroup: runner's cgroup directory from mountinfo and
// /proc/self/cgroup: a hybrid host (v2 at /sys/fs/cgroup/unified beside
// v1 controllers), a pure v2 host, a container that sees part of the
// hierarchy (mount root not /), an escaped mount point, and no v2.
func TestFindCgroup(t *testing.T) {
	v1 := "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	tests := []struct {
		name, mountinfo, cgroup, want string
	}{
		{"hybrid", v1 + "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n", "4:memory:/x\n0::/\n", "/sys/fs/cgroup/unified"},
		{"pure v2, nested", "30 22 0:27 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n", "0::/user.slice/runner.service\n", "/sys/fs/cgroup/user.slice/runner.service"},
		{"container's part", "30 22 0:27 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n", "0::/docker/abc/sub\n", "/sys/fs/cgroup/sub"},
		{"escaped mount point", "30 22 0:27 / /mnt/cg\\040v2 rw - cgroup2 cgroup2 rw\n", "0::/a\n", "/mnt/cg v2/a"},
		{"outside the mount's part", "30 22 0:27 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n", "0::/other\n", ""},
		{"v1 only", v1, "1:cpu:/\n", ""},
	}
	for _, tt := range tests {
		got, err := findCgroup(tt.mountinfo, tt.cgroup)
		if got != tt.want || (tt.want == "") != (err != nil) {
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// TestRunningStepsHoldNoCgroupDirectory: while steps run, runner holds no
// descriptor of their cgroups' directories. Each process runner starts
// gets a copy of its descriptors, which its exec closes one by one: with
// one held per running step, what a step's start costs grew with the
// steps running beside it.
func TestRunningStepsHoldNoCgroupDirectory(t *testing.T) {
	parent, why := stepsCgroupDir()
	if parent == "" {
		testtool.Missing(t, "a writable cgroup v2", "run the tests as root, or in a delegated cgroup: "+why)
	}
	const n = 8
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Run(ctx, Spec{Script: "echo up; exec sleep 300", Stdout: io.Discard, Grace: time.Second})
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	inSteps := func() (procs int, fds []string) {
		filepath.WalkDir(parent, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Name() == "cgroup.procs" && strings.Contains(p, "/runner-") {
				if b, err := os.ReadFile(p); err == nil {
					procs += len(strings.Fields(string(b)))
				}
			}
			return nil
		})
		ents, _ := os.ReadDir("/proc/self/fd")
		for _, e := range ents {
			if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, parent+"/runner-") {
				fds = append(fds, l)
			}
		}
		return procs, fds
	}
	// A step holds its cgroup's directory until its process has started:
	// once all are running, none may be held for long.
	deadline := time.Now().Add(30 * time.Second)
	var runningSince time.Time
	for {
		procs, fds := inSteps()
		switch {
		case procs >= n && len(fds) == 0:
			return
		case procs >= n && runningSince.IsZero():
			runningSince = time.Now()
		case procs >= n && time.Since(runningSince) > 5*time.Second:
			t.Fatalf("with %d steps running, runner holds %d descriptors of their cgroups: %v", n, len(fds), fds)
		case time.Now().After(deadline):
			t.Fatalf("%d of %d steps' processes running after 30 s", procs, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

//go:build unix

package proc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWatchdogHelper is the runner the test below kills: it runs one step
// and waits for it (never returns on its own).
func TestWatchdogHelper(t *testing.T) {
	ticks := os.Getenv("RUNNER_PROC_WATCHDOG_TICKS")
	if ticks == "" {
		t.Skip("a helper of TestStepEndsWhenRunnerIsKilled")
	}
	noCgroup.Store(os.Getenv("RUNNER_PROC_WATCHDOG_FALLBACK") == "1")
	// The step and a child of it each append their pid every 100 ms.
	script := `tick() { while :; do echo "$1" >> "$TICKS"; sleep 0.1; done; }
sh -c 'while :; do echo "$$" >> "$TICKS"; sleep 0.1; done' &
tick $$`
	Run(context.Background(), Spec{Script: script, Env: append(os.Environ(), "TICKS="+ticks)})
}

// TestStepEndsWhenRunnerIsKilled: runner killed with SIGKILL in the middle
// of a step (it can do nothing then) leaves no process of the step
// running: its watchdog ends them all, with a cgroup or without.
func TestStepEndsWhenRunnerIsKilled(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		name := "cgroup"
		if fallback {
			name = "group"
		} else if dir, _ := stepsCgroupDir(); dir == "" {
			name = "group (no cgroup here)"
		}
		t.Run(name, func(t *testing.T) {
			ticks := filepath.Join(t.TempDir(), "ticks")
			helper := exec.Command(os.Args[0], "-test.run=^TestWatchdogHelper$", "-test.count=1")
			helper.Env = append(os.Environ(), "RUNNER_PROC_WATCHDOG_TICKS="+ticks)
			if fallback {
				helper.Env = append(helper.Env, "RUNNER_PROC_WATCHDOG_FALLBACK=1")
			}
			if err := helper.Start(); err != nil {
				t.Fatal(err)
			}
			// Both processes of the step have ticked.
			var pids []int
			deadline := time.Now().Add(30 * time.Second)
			for len(pids) < 2 {
				if time.Now().After(deadline) {
					helper.Process.Kill()
					t.Fatalf("the step did not start ticking: %v", pids)
				}
				time.Sleep(50 * time.Millisecond)
				pids = tickPids(ticks)
			}
			helper.Process.Kill() // SIGKILL: runner has no say
			helper.Wait()

			// Every process of the step ends; none ticks after.
			deadline = time.Now().Add(10 * time.Second)
			for _, pid := range pids {
				for running(pid) && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
			}
			assertGone(t, pids)
			before := len(tickLines(ticks))
			time.Sleep(500 * time.Millisecond) // five ticks' time
			if after := len(tickLines(ticks)); after != before {
				t.Errorf("the step went on ticking after runner died: %d ticks, then %d", before, after)
			}
		})
	}
}

// TestShutdownHelper is a runner that runs three steps at once, says
// where its steps' cgroup, its watchdog's register and its watchdog are,
// and exits as a binary does (Shutdown).
func TestShutdownHelper(t *testing.T) {
	out := os.Getenv("RUNNER_PROC_SHUTDOWN_OUT")
	if out == "" {
		t.Skip("a helper of TestNormalExitLeavesNothing")
	}
	noCgroup.Store(os.Getenv("RUNNER_PROC_WATCHDOG_FALLBACK") == "1")
	done := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := Run(context.Background(), Spec{Script: "sleep 0.3"})
			done <- err
		}()
	}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	cg := runCgroupPath()
	w := &theWatchdog
	os.WriteFile(out, []byte(fmt.Sprintf("%s\n%s\n%d\n", cg, w.dir, w.pid)), 0o600)
	Shutdown()
	os.Exit(0)
}

// TestNormalExitLeavesNothing: once a runner that ran steps has exited
// normally, its steps' cgroups, its watchdog's register and the watchdog
// itself are gone already, not some time later.
func TestNormalExitLeavesNothing(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		name := "cgroup"
		if fallback {
			name = "group"
		}
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "where")
			helper := exec.Command(os.Args[0], "-test.run=^TestShutdownHelper$", "-test.count=1")
			helper.Env = append(os.Environ(), "RUNNER_PROC_SHUTDOWN_OUT="+out)
			if fallback {
				helper.Env = append(helper.Env, "RUNNER_PROC_WATCHDOG_FALLBACK=1")
			}
			if b, err := helper.CombinedOutput(); err != nil {
				t.Fatalf("helper: %v\n%s", err, b)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			f := strings.Split(string(data), "\n")
			cg, register := f[0], f[1]
			pid, _ := strconv.Atoi(f[2])
			if dir, _ := stepsCgroupDir(); !fallback && dir != "" && cg == "" {
				t.Error("the steps ran without a cgroup where cgroups can be made")
			}
			if cg != "" {
				if _, err := os.Stat(cg); !os.IsNotExist(err) {
					t.Errorf("the steps' cgroup %s is still there (%v)", cg, err)
				}
			}
			if register == "" || pid == 0 {
				t.Fatalf("no watchdog: %q", data)
			}
			if _, err := os.Stat(register); !os.IsNotExist(err) {
				t.Errorf("the watchdog's register %s is still there (%v)", register, err)
			}
			if running(pid) {
				t.Errorf("the watchdog (pid %d) still runs", pid)
			}
		})
	}
}

// TestShutdownDoesNotWaitOnAStuckStart: an exit whose cleaning cannot
// begin (a step's start holds on in the kernel) still ends, leaving the
// cleaning to the watchdog.
func TestShutdownDoesNotWaitOnAStuckStart(t *testing.T) {
	startMu.Lock()
	defer startMu.Unlock()
	done := make(chan struct{})
	go func() { Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown still waits for a start that does not end")
	}
}

func tickLines(path string) []string {
	data, _ := os.ReadFile(path)
	return strings.Fields(string(data))
}

func tickPids(path string) []int {
	seen := map[int]bool{}
	var pids []int
	for _, l := range tickLines(path) {
		if pid, err := strconv.Atoi(l); err == nil && !seen[pid] {
			seen[pid] = true
			pids = append(pids, pid)
		}
	}
	return pids
}

// What the watchdog adds to a step: its entry in the register, written
// and removed (the watchdog process itself starts once per runner).
//
//	go test -run XXX -bench WatchdogEntry -benchtime 2000x ./internal/sys/proc/
func BenchmarkWatchdogEntry(b *testing.B) {
	for b.Loop() {
		startMu.Lock()
		wd := startWatchdog(nil)
		wd.arm(1 << 30)
		startMu.Unlock()
		wd.disarm()
	}
}

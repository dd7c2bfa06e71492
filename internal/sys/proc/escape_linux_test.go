package proc

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/testutil/testtool"
)

// bothTrackings runs f with the steps' processes tracked by a cgroup of
// their own (where this process may make one: root, or a delegated
// cgroup; CI runs as root) and by the fallback (process group, token,
// /proc).
func bothTrackings(t *testing.T, f func(t *testing.T, cgroup bool)) {
	t.Run("cgroup", func(t *testing.T) {
		if dir, why := stepsCgroupDir(); dir == "" {
			testtool.Missing(t, "a writable cgroup v2", "run the tests as root, or in a delegated cgroup: "+why)
		}
		f(t, true)
	})
	t.Run("fallback", func(t *testing.T) {
		noCgroup.Store(true)
		t.Cleanup(func() { noCgroup.Store(false) })
		f(t, false)
	})
}

// TestEscapedProcessesEndWithTheStep: processes that leave the step's
// process group (setsid, setsid -f, a double fork into a new session, a
// nohup'd daemon) end with the step, whether it ends on its own, times
// out or is cancelled; runner, a subreaper, reaps them (no zombie left).
// With a cgroup, so does one that also clears its environment (the token
// with it). keep_background leaves them alone. Each process is checked
// gone and reaped when Run returns: a killed process that had left its
// cgroup, and lost the environment that carries its token, but was not
// yet a zombie, once counted as gone (the step's flake under load).
func TestEscapedProcessesEndWithTheStep(t *testing.T) {
	if err := BecomeSubreaper(); err != nil {
		t.Fatalf("prctl: %v", err)
	}
	bothTrackings(t, testEscapes)
}

func testEscapes(t *testing.T, cgroup bool) {
	daemon := func(n int) string {
		return `sh -c 'echo $$ > "$PIDS/` + strconv.Itoa(n) + `"; exec sleep 300'`
	}
	tests := []struct {
		name    string
		script  string
		n       int // pid files the script writes
		timeout time.Duration
		cancel  bool
		keep    bool
		cgroup  bool // only a cgroup finds it
	}{
		{"setsid -f, step ends", "setsid -f " + daemon(1) + " </dev/null >/dev/null 2>&1", 1, 0, false, false, false},
		{"setsid in background, step ends", "setsid " + daemon(1) + " </dev/null >/dev/null 2>&1 &", 1, 0, false, false, false},
		{"double fork into a new session", "( (setsid " + daemon(1) + " &) & ) </dev/null >/dev/null 2>&1; (" + daemon(2) + " &) >/dev/null 2>&1", 2, 0, false, false, false},
		{"nohup daemon ignoring SIGTERM", "nohup setsid sh -c 'trap \"\" TERM; echo $$ > \"$PIDS/1\"; while :; do sleep 1; done' </dev/null >/dev/null 2>&1 &", 1, 0, false, false, false},
		// The timeout leaves the daemon time to start on a loaded machine.
		{"setsid daemon, step times out", "setsid -f " + daemon(1) + " </dev/null >/dev/null 2>&1; sleep 300", 1, 2 * time.Second, false, false, false},
		{"setsid daemon, step cancelled", "setsid -f " + daemon(1) + " </dev/null >/dev/null 2>&1; sleep 300", 1, 0, true, false, false},
		{"keep_background keeps a daemon", "setsid -f " + daemon(1) + " </dev/null >/dev/null 2>&1", 1, 0, false, true, false},
		{"setsid -f daemon that clears its environment", "setsid -f env -i PIDS=\"$PIDS\" " + daemon(1) + " </dev/null >/dev/null 2>&1", 1, 0, false, false, true},
		{"env-clearing daemon ignoring SIGTERM, step cancelled", "setsid -f env -i PIDS=\"$PIDS\" sh -c 'trap \"\" TERM; echo $$ > \"$PIDS/1\"; while :; do sleep 1; done' </dev/null >/dev/null 2>&1; sleep 300", 1, 0, true, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cgroup && !cgroup {
				t.Skip("without a cgroup, a process that clears its environment and leaves the group is not found (docs/safety.md says so)")
			}
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				// Cancel once the daemon is up.
				go func() {
					for !fileExists(filepath.Join(dir, "1")) {
						time.Sleep(10 * time.Millisecond)
					}
					time.Sleep(50 * time.Millisecond)
					cancel()
				}()
			}
			// The script waits for its daemons to write their pids, so the
			// step never ends before they exist.
			script := tc.script + "\nfor i in $(seq 1 " + strconv.Itoa(tc.n) + "); do while [ ! -s \"$PIDS/$i\" ]; do sleep 0.01; done; done"
			if tc.timeout > 0 || tc.cancel {
				script = strings.Replace(tc.script, "; sleep 300", "", 1) + "\nwhile [ ! -s \"$PIDS/1\" ]; do sleep 0.01; done; sleep 300"
			}
			r, err := Run(ctx, Spec{Script: script, Env: append(os.Environ(), "PIDS="+dir), Timeout: tc.timeout,
				Grace: 500 * time.Millisecond, KeepBackground: tc.keep})
			if err != nil {
				t.Fatal(err)
			}
			// A timeout that came before the daemon was up (a loaded
			// machine) tested nothing: run the row again with a longer one.
			for timeout := tc.timeout; timeout > 0 && timeout < 8*tc.timeout && !fileExists(filepath.Join(dir, "1")); {
				timeout *= 2
				t.Logf("the daemon was not up before the timeout; again with %v", timeout)
				if r, err = Run(ctx, Spec{Script: script, Env: append(os.Environ(), "PIDS="+dir), Timeout: timeout,
					Grace: 500 * time.Millisecond}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.timeout > 0 && !r.TimedOut {
				t.Errorf("TimedOut = false")
			}
			pids := readPidFiles(t, dir, tc.n)
			if tc.keep {
				t.Cleanup(func() {
					for _, p := range pids {
						syscall.Kill(p, syscall.SIGKILL)
					}
				})
				for _, p := range pids {
					if !running(p) {
						t.Errorf("keep_background: daemon %d was ended", p)
					}
				}
				return
			}
			assertGone(t, pids)
			// Reaped, not left a zombie: the pid is gone entirely.
			deadline := time.Now().Add(2 * time.Second)
			for _, p := range pids {
				for syscall.Kill(p, 0) == nil && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if syscall.Kill(p, 0) == nil {
					t.Errorf("process %d left as a zombie", p)
				}
			}
		})
	}
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Size() > 0
}

func readPidFiles(t *testing.T, dir string, n int) []int {
	t.Helper()
	var pids []int
	for i := 1; i <= n; i++ {
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			t.Fatalf("pid file %d: %v", i, err)
		}
		p, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("pid file %d: %q", i, b)
		}
		pids = append(pids, p)
	}
	return pids
}

// TestParallelStepsKeepTheirOwnDaemons: two steps run at once, each
// starting a setsid daemon; the one that keeps its background processes
// keeps its daemon while the other step's daemon is ended with it. Their
// cgroups, or their tokens, tell their processes apart.
func TestParallelStepsKeepTheirOwnDaemons(t *testing.T) {
	bothTrackings(t, func(t *testing.T, _ bool) { testParallelDaemons(t) })
}

func testParallelDaemons(t *testing.T) {
	dirs := [2]string{t.TempDir(), t.TempDir()}
	script := `setsid -f sh -c 'echo $$ > "$PIDS/1"; exec sleep 300' </dev/null >/dev/null 2>&1
while [ ! -s "$PIDS/1" ]; do sleep 0.01; done; sleep 0.3`
	done := make(chan error, 2)
	for i, keep := range []bool{true, false} {
		go func() {
			_, err := Run(context.Background(), Spec{Script: script, Env: append(os.Environ(), "PIDS="+dirs[i]),
				Grace: 500 * time.Millisecond, KeepBackground: keep})
			done <- err
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	kept, ended := readPidFiles(t, dirs[0], 1)[0], readPidFiles(t, dirs[1], 1)[0]
	t.Cleanup(func() { syscall.Kill(kept, syscall.SIGKILL) })
	if !running(kept) {
		t.Errorf("the daemon of the step with keep_background was ended by the other step")
	}
	assertGone(t, []int{ended})
}

// What a step's end costs in /proc reading: the scan for its group and
// escaped processes, and the reaping of orphans. Both read every process
// on the host, so they grow with the host's processes, not the step's.
//
//	go test -run XXX -bench 'Scan|Reap' ./internal/sys/proc/
func BenchmarkScan(b *testing.B) {
	since := startTime(os.Getpid())
	for b.Loop() {
		scan(1<<30, newToken(), since)
	}
}

func BenchmarkReapOrphans(b *testing.B) {
	for b.Loop() {
		reapOrphans()
	}
}

func TestParseStat(t *testing.T) {
	tail := " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 424242 0 0\n"
	tests := []struct {
		line string
		want procStat
		ok   bool
	}{
		{"12 (sh) S 1 12" + tail, procStat{state: 'S', ppid: 1, pgrp: 12, start: 424242}, true},
		{"13 (a b) c)) Z 12 -1" + tail, procStat{state: 'Z', ppid: 12, pgrp: -1, start: 424242}, true},
		{"14 (x) R 1 14 0 0", procStat{}, false},     // too short: no start time
		{"15 (x) RS 1 15" + tail, procStat{}, false}, // a state is one letter
		{"16 (x) S one 16" + tail, procStat{}, false},
		{"no parenthesis", procStat{}, false},
	}
	for _, tt := range tests {
		got, ok := parseStat([]byte(tt.line))
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

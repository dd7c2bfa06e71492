//go:build unix

package proc

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func run(t *testing.T, s Spec) *Result {
	t.Helper()
	r, err := Run(context.Background(), s)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return r
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		name   string
		spec   Spec
		code   int
		signal string
		stdout string
		stderr string
	}{
		{"success", Spec{Script: "echo hello"}, 0, "", "hello\n", ""},
		{"exit code", Spec{Script: "echo oops >&2; exit 3"}, 3, "", "", "oops\n"},
		{"killed by a signal", Spec{Script: "kill -KILL $$"}, -1, "SIGKILL", "", ""},
		{"argv", Spec{Args: []string{"sh", "-c", `printf '%s' "$1"`, "x", "a b;c"}}, 0, "", "a b;c", ""},
		{"stdin", Spec{Script: "tr a-z A-Z", Stdin: strings.NewReader("abc")}, 0, "", "ABC", ""},
		{"no stdin", Spec{Script: "cat; echo done"}, 0, "", "done\n", ""},
		{"environment", Spec{Script: `echo "$FOO"`, Env: []string{"FOO=bar"}}, 0, "", "bar\n", ""},
		{"dir", Spec{Script: "pwd", Dir: "/"}, 0, "", "/\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.spec)
			if r.ExitCode != tt.code || r.Signal != tt.signal {
				t.Errorf("exit %d signal %q, want %d %q", r.ExitCode, r.Signal, tt.code, tt.signal)
			}
			if r.Stdout.Text != tt.stdout || r.Stderr.Text != tt.stderr {
				t.Errorf("stdout %q stderr %q, want %q %q", r.Stdout.Text, r.Stderr.Text, tt.stdout, tt.stderr)
			}
			if r.TimedOut || r.Canceled || r.Pid == 0 {
				t.Errorf("TimedOut %v Canceled %v Pid %d", r.TimedOut, r.Canceled, r.Pid)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
	}{
		{"missing binary", Spec{Args: []string{"no-such-binary-xyz"}}},
		{"missing dir", Spec{Script: "true", Dir: "/no/such/dir"}},
		{"nothing to run", Spec{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r, err := Run(context.Background(), tt.spec); err == nil {
				t.Fatalf("want an error, got %+v", r)
			}
		})
	}
}

func TestStreamWriters(t *testing.T) {
	var out, errw bytes.Buffer
	r := run(t, Spec{Script: "seq 1 100000; echo e >&2", Stdout: &out, Stderr: &errw, MaxOutput: 100})
	if out.Len() != int(r.Stdout.Bytes) || !strings.HasSuffix(out.String(), "99999\n100000\n") {
		t.Errorf("stream writer got %d bytes, process wrote %d", out.Len(), r.Stdout.Bytes)
	}
	if errw.String() != "e\n" {
		t.Errorf("stderr writer got %q", errw.String())
	}
	if len(r.Stdout.Text) > 200 || r.Stdout.Dropped == 0 {
		t.Errorf("kept text not capped: %d bytes, %d dropped", len(r.Stdout.Text), r.Stdout.Dropped)
	}
}

// readPids reads the pids a script echoed, one per line.
func readPids(t *testing.T, text string) []int {
	t.Helper()
	var pids []int
	for _, f := range strings.Fields(text) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	if len(pids) == 0 {
		t.Fatalf("script printed no pid: %q", text)
	}
	return pids
}

// running reports whether pid is a live process. A zombie is dead: where
// PID 1 does not reap orphans, kill(pid, 0) still finds it.
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err)
	}
	st, ok := parseStat(stat)
	return !ok || st.state != 'Z'
}

func assertGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if running(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("process %d survived", pid)
		}
	}
}

func TestTimeoutEndsTheGroup(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		minTime time.Duration // the grace is waited only when SIGTERM is ignored
		signal  string
	}{
		{"background and foreground sleep", "sleep 300 & echo $!; sleep 300 & echo $!; wait", 0, "SIGTERM"},
		{"SIGTERM ignored", "trap '' TERM; sleep 300 & echo $!; sleep 300 & echo $!; wait", 700 * time.Millisecond, "SIGKILL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const timeout, grace = 300 * time.Millisecond, 700 * time.Millisecond
			start := time.Now()
			r := run(t, Spec{Script: tt.script, Timeout: timeout, Grace: grace})
			took := time.Since(start)
			t.Logf("ended after %v (timeout %v, grace %v)", took.Round(time.Millisecond), timeout, grace)
			if !r.TimedOut || r.Canceled {
				t.Errorf("TimedOut %v Canceled %v", r.TimedOut, r.Canceled)
			}
			if r.ExitCode != -1 || r.Signal != tt.signal {
				t.Errorf("exit %d signal %q, want -1 %s", r.ExitCode, r.Signal, tt.signal)
			}
			// The sleeps last 300 s: ending well before that shows the group
			// was ended; the margin is for a loaded machine, not a speed goal.
			if limit := timeout + grace + 30*time.Second; took < timeout+tt.minTime || took > limit {
				t.Errorf("took %v, want between %v and %v", took, timeout+tt.minTime, limit)
			}
			assertGone(t, readPids(t, r.Stdout.Text))
		})
	}
}

// cancelOnOutput cancels once the process has printed something: a fixed
// delay can come before a loaded machine has run the script at all.
type cancelOnOutput struct{ cancel context.CancelFunc }

func (c cancelOnOutput) Write(p []byte) (int, error) {
	c.cancel()
	return len(p), nil
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	r, err := Run(ctx, Spec{Script: "sleep 300 & echo $!; wait", Grace: time.Second, Stdout: cancelOnOutput{cancel}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Canceled || r.TimedOut {
		t.Errorf("Canceled %v TimedOut %v", r.Canceled, r.TimedOut)
	}
	t.Logf("ended %v after it started", time.Since(start))
	assertGone(t, readPids(t, r.Stdout.Text))

	if _, err := Run(ctx, Spec{Script: "true"}); err == nil {
		t.Error("Run with a done context started a process")
	}
}

func TestBackgroundAfterExit(t *testing.T) {
	t.Run("ended by default", func(t *testing.T) {
		// The sleep holds stdout open; Run must not wait for it, nor for
		// the grace (far longer than the bound, so a loaded machine
		// cannot pass a Run that waited it, nor fail one that did not).
		start := time.Now()
		r := run(t, Spec{Script: "sleep 300 & echo $!", Grace: 90 * time.Second})
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("took %v", took)
		}
		if r.ExitCode != 0 || r.TimedOut {
			t.Errorf("exit %d TimedOut %v", r.ExitCode, r.TimedOut)
		}
		assertGone(t, readPids(t, r.Stdout.Text))
	})
	t.Run("kept on request", func(t *testing.T) {
		r := run(t, Spec{Script: "sleep 300 >/dev/null 2>&1 & echo $!", KeepBackground: true, Grace: 90 * time.Second})
		pids := readPids(t, r.Stdout.Text)
		t.Cleanup(func() { syscall.Kill(pids[0], syscall.SIGKILL) })
		if !running(pids[0]) {
			t.Error("background process was ended despite KeepBackground")
		}
		if r.Duration > 30*time.Second {
			t.Errorf("took %v", r.Duration)
		}
	})
	t.Run("pipe held outside the group", func(t *testing.T) {
		// A process in its own session keeps the pipe open; Run stops
		// reading after the grace period instead of hanging.
		start := time.Now()
		r := run(t, Spec{Script: "setsid sleep 300 & echo $!", Grace: 300 * time.Millisecond})
		pids := readPids(t, r.Stdout.Text)
		t.Cleanup(func() {
			for _, p := range pids {
				syscall.Kill(p, syscall.SIGKILL)
			}
		})
		if took := time.Since(start); took > 30*time.Second { // not the sleep's 300 s
			t.Errorf("took %v", took)
		}
	})
}

// What one command step's process costs, start to end: `true` run (under
// `sh -c`, or directly as a command step starts a simple command), waited
// for, its cgroup (or group) checked empty and its orphans reaped.
// Compare with BenchmarkShTrue, the same processes started by os/exec
// alone; self-ns/op is this process's own CPU, its child's left out.
//
//	go test -run XXX -bench 'CommandStep|ShTrue' -benchtime 2000x ./internal/sys/proc/
func BenchmarkCommandStep(b *testing.B) {
	for _, bc := range []struct {
		name     string
		fallback bool
		direct   []string
	}{
		{"cgroup", false, nil},
		{"cgroup-direct", false, []string{"true"}},
		{"fallback", true, nil},
		{"fallback-direct", true, []string{"true"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			noCgroup.Store(bc.fallback)
			defer noCgroup.Store(false)
			before, self := cpuWithChildren(), cpuSelf()
			for b.Loop() {
				if _, err := Run(context.Background(), Spec{Script: "true", Direct: bc.direct}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuWithChildren()-before)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(cpuSelf()-self)/float64(b.N), "self-ns/op")
		})
	}
}

func BenchmarkShTrue(b *testing.B) {
	for _, argv := range [][]string{{"/bin/sh", "-c", "true"}, {"true"}} {
		b.Run(strings.Join(argv, " "), func(b *testing.B) {
			before, self := cpuWithChildren(), cpuSelf()
			for b.Loop() {
				if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuWithChildren()-before)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(cpuSelf()-self)/float64(b.N), "self-ns/op")
		})
	}
}

// cpuSelf is the CPU this process has used (user + system), in
// nanoseconds: a step's cost to runner, its child's left out.
func cpuSelf() int64 {
	var self syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	return self.Utime.Nano() + self.Stime.Nano()
}

// cpuWithChildren is the CPU this process and its waited-for children
// have used (user + system), in nanoseconds.
func cpuWithChildren() int64 {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	return self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano()
}

// TestDrain: the wait for a step's streams to be copied ends when both
// are, or when the grace passes, and then takes up where it stopped.
func TestDrain(t *testing.T) {
	done := make(chan struct{}, 2)
	left := 2
	done <- struct{}{}
	if drain(done, &left, 10*time.Millisecond) {
		t.Fatal("drain returned true with one stream of two copied")
	}
	if left != 1 {
		t.Fatalf("%d left after one of two, want 1", left)
	}
	go func() { time.Sleep(20 * time.Millisecond); done <- struct{}{} }()
	if !drain(done, &left, -1) || left != 0 {
		t.Fatalf("drain without a bound: left %d", left)
	}
	done <- struct{}{}
	done <- struct{}{}
	left = 2
	if ok := drain(done, &left, 0); !ok || left != 0 {
		t.Fatalf("both copied already: drain with no time left says %v, %d left", ok, left)
	}
}

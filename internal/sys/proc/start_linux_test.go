package proc

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestStepsWaitingToStartHoldNothing: steps wait their turn to start
// holding no descriptor (pipes, their cgroup's directory): each process
// started closes a copy of every one runner holds, so with 1,000 steps
// waiting, each start paid for 5,000.
func TestStepsWaitingToStartHoldNothing(t *testing.T) {
	const n = 20
	var waiting atomic.Int32
	awaitTurn = func() { waiting.Add(1) }
	defer func() { awaitTurn = func() {} }()
	before := countFDs(t)
	startMu.Lock()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := Run(context.Background(), Spec{Script: "true"}); err != nil {
				t.Error(err)
			}
		}()
	}
	for waiting.Load() < n {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // what a step would open after it says it waits
	held := countFDs(t) - before
	startMu.Unlock()
	wg.Wait()
	if held > 2 {
		t.Errorf("%d steps waiting to start hold %d descriptors", n, held)
	}
}

func countFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestMoreStepsThanSlots: steps beyond the processes runner has
// descriptors for wait for one to end, and all run; a step canceled while
// it waits returns at once. A group of 10,000 commands failed with
// "too many open files".
func TestMoreStepsThanSlots(t *testing.T) {
	old := slots
	slots = make(chan struct{}, 3)
	defer func() { slots = old }()
	const n = 10
	dir := t.TempDir()
	var wg sync.WaitGroup
	var most atomic.Int32
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
			ents, _ := os.ReadDir(dir)
			if k := len(ents); int32(k) > most.Load() {
				most.Store(int32(k))
			}
		}
	}()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := Run(context.Background(), Spec{Script: `touch "$D/$$"; sleep 0.2; rm "$D/$$"`, Env: append(os.Environ(), "D="+dir)})
			if err != nil || r.ExitCode != 0 {
				t.Errorf("a step: %v, %+v", err, r)
			}
		}()
	}
	wg.Wait()
	close(done)
	if m := most.Load(); m > 3 || m == 0 {
		t.Errorf("%d steps ran at once with 3 slots", m)
	}
	// All slots taken: a canceled step does not wait for one.
	for range 3 {
		slots <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Run(ctx, Spec{Script: "true"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a step canceled while it waits for a slot: %v", err)
	}
}

// TestChildOutputIsBlocking: a step's process gets a stdout and stderr
// it can write as programs expect: blocking, so a burst larger than the
// pipe waits instead of failing with EAGAIN, however the step was
// started (directly or under sh).
func TestChildOutputIsBlocking(t *testing.T) {
	script := `for fd in 1 2; do grep '^flags:' /proc/self/fdinfo/$fd; done; head -c 1000000 /dev/zero`
	for _, tt := range []struct {
		name string
		spec Spec
	}{
		{"under sh", Spec{Script: script}},
		{"directly", Spec{Script: "cat /proc/self/fdinfo/1", Direct: []string{"cat", "/proc/self/fdinfo/1"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.spec)
			if r.ExitCode != 0 {
				t.Fatalf("exit %d: %s", r.ExitCode, r.Stderr.Text)
			}
			n := 0
			for _, line := range strings.Split(r.Stdout.Text, "\n") {
				flags, ok := strings.CutPrefix(line, "flags:")
				if !ok {
					continue
				}
				n++
				v, err := strconv.ParseUint(strings.TrimSpace(flags), 8, 64)
				if err != nil {
					t.Fatalf("flags %q: %v", flags, err)
				}
				if v&syscall.O_NONBLOCK != 0 {
					t.Errorf("the step's output is non-blocking (flags %s)", strings.TrimSpace(flags))
				}
			}
			if n == 0 {
				t.Fatalf("no flags read: %q", r.Stdout.Text)
			}
		})
	}
}

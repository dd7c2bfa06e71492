package main

import (
	"context"
	"flag"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/testutil/planfuzz"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	propPlans = flag.Int("plans", 200, "random plans the replay property test runs")
	propSeed  = flag.Uint64("seed", 0, "seed of the replay property test (0: a new one, printed)")
	propOnly  = flag.Int("plan", -1, "run only this plan of the replay property test (with -seed)")
)

// propCase records one random plan (killed at a random moment and resumed,
// for some), then replays it offline and requires a match.
func propCase(t *testing.T, n int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	src := planfuzz.Plan(r, n, planfuzz.Options{})
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(src), 0o644)
	bb := filepath.Join(wd, "bb.json")
	how := "run"
	if r.IntN(4) == 0 {
		how = "killed, resumed"
		cmd := exec.Command(binary, "run", plan, "-q", "--out", bb)
		cmd.Dir = wd
		if err := cmd.Start(); err != nil {
			t.Error(err)
			return
		}
		time.Sleep(time.Duration(r.IntN(120)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if _, err := os.Stat(bb); err != nil {
			how = "killed before the board existed, run again"
			runCLI(t, wd, "run", plan, "-q", "--out", bb)
		} else if res := resumeKilled(t, wd, bb); res.code == exitUsage {
			t.Errorf("plan %d (seed %d): resume: %s\n%s", n, seed, res.stderr, src)
			return
		}
	} else if res := runCLI(t, wd, "run", plan, "-q", "--out", bb); res.code == exitUsage {
		t.Errorf("plan %d (seed %d): the generator made a bad plan: %s\n%s", n, seed, res.stderr, src)
		return
	} else if res.code == 1 && r.IntN(2) == 0 {
		how = "failed, resumed"
		runCLI(t, wd, "resume", bb, "-q")
	}
	// The replay runs in this process, through the library.
	saved, err := board.Load(bb)
	if err != nil {
		t.Errorf("plan %d (seed %d, %s): %v\n%s", n, seed, how, err, src)
		return
	}
	rep, err := replay.Run(context.Background(), saved, replay.Options{})
	if err != nil || !rep.Matched() {
		div := ""
		if err == nil {
			div = rep.Divergence.String()
		}
		t.Errorf("plan %d (seed %d, %s): %v\n%s\n%s", n, seed, how, err, div, src)
	}
}

// Random plans, some killed at a random moment and resumed, all replay
// offline to a match. -plans N runs more; -seed S repeats a run.
func TestReplayRandomPlans(t *testing.T) {
	seed := *propSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (go test -run TestReplayRandomPlans -seed %d to repeat)", seed, seed)
	planfuzz.Each(*propPlans, *propOnly, 6, func(n int) { propCase(t, n, seed) }) // the plans mostly sleep
}

// resumeKilled resumes a run whose process was just killed, waiting
// briefly while the board's lock still names the dead process.
func resumeKilled(t *testing.T, wd, bb string) result {
	var res result
	for range 20 {
		if res = runCLI(t, wd, "resume", bb, "-q"); res.code != exitUsage || !strings.Contains(res.stderr, "is live") {
			return res
		}
		time.Sleep(50 * time.Millisecond)
	}
	return res
}

package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// A run killed with SIGKILL at a random moment, then resumed, ends with
// every step done exactly once and no board entry lost or duplicated.
func TestKillThenResume(t *testing.T) {
	trials := 30
	if testing.Short() {
		trials = 5
	}
	want := []string{"a#1", "g1#1", "g2#1", "g3#1", "group#1", "z#1"}
	for v := 1; v <= 5; v++ {
		want = append(want, fmt.Sprintf("n#%d", v), fmt.Sprintf("w#%d", v), fmt.Sprintf("loop#%d", v))
	}
	sort.Strings(want)
	midRun := 0
	defer func() {
		t.Logf("%d of %d kills landed mid-run", midRun, trials)
		if midRun < trials/3 {
			t.Errorf("only %d of %d kills landed mid-run: the test is not testing resume", midRun, trials)
		}
	}()
	// start runs the plan and waits for its run to begin (a loaded
	// machine starts processes slowly).
	start := func(wd, out string) *exec.Cmd {
		cmd := exec.Command(binary, "run", testdata("crash.yaml"), "--out", out, "-q")
		cmd.Dir = wd
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			if _, err := os.Stat(out); err == nil {
				break
			}
		}
		return cmd
	}
	// How long a run takes here from its beginning (its file there) to
	// its end, the middle of three: the kills land at random moments
	// within it, on a fast machine or a loaded one. Timed from the
	// process's start, as the kills are not, it let a third of them land
	// after the end; a fixed 0-200 ms missed most runs on either.
	var runs []time.Duration
	for range 3 {
		wd := t.TempDir()
		cmd := start(wd, filepath.Join(wd, "bb.json"))
		began := time.Now()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("a whole run: %v", err)
		}
		runs = append(runs, time.Since(began))
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i] < runs[j] })
	whole := runs[1]
	// A loaded machine may still end or slow a run past its moment: the
	// trials go on, three times as many at most, until enough landed
	// mid-run. Every trial's resume is checked all the same.
	for i := 0; i < trials || (midRun < trials/3 && i < 3*trials); i++ {
		wd := t.TempDir()
		out := filepath.Join(wd, "bb.json")
		cmd := start(wd, out)
		time.Sleep(time.Duration(rand.Int64N(int64(whole))))
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if _, err := os.Stat(out); os.IsNotExist(err) {
			continue // killed before the run began
		}
		if killed, err := board.Load(out); err == nil && killed.Run().Status == "running" {
			midRun++
		}
		if r := runCLI(t, wd, "resume", out, "-q"); r.code != 0 {
			t.Fatalf("trial %d: resume exit %d: %s", i, r.code, r.stderr)
		}
		b, err := board.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		if b.Run().Status != "succeeded" {
			t.Fatalf("trial %d: status %s: %s", i, b.Run().Status, b.Run().Error)
		}
		var done []string
		for _, s := range b.Steps() {
			if s.Status == "succeeded" {
				done = append(done, fmt.Sprintf("%s#%d", s.Label, s.Visit))
			}
		}
		sort.Strings(done)
		if strings.Join(done, " ") != strings.Join(want, " ") {
			t.Fatalf("trial %d: steps done\n got %v\nwant %v", i, done, want)
		}
		// One audit entry per finished visit, and each key written once per visit.
		audit := map[string]int{}
		for _, e := range b.Entries() {
			if e.Role == "step" && e.Key == "" && e.Meta["status"] == "succeeded" {
				audit[fmt.Sprintf("%s#%v", e.Label, e.Meta["visit"])]++
			}
		}
		for _, k := range want {
			if audit[k] != 1 {
				t.Errorf("trial %d: %s has %d audit entries, want 1", i, k, audit[k])
			}
		}
		if n, _ := b.Get("n"); n.Version != 5 || fmt.Sprint(n.Content) != "5" {
			t.Errorf("trial %d: key n = %v at version %d, want 5 at version 5", i, n.Content, n.Version)
		}
		if g3, _ := b.Get("g3"); g3.Version != 1 {
			t.Errorf("trial %d: key g3 written %d times", i, g3.Version)
		}
		var z struct{ Output string }
		json.Unmarshal(b.Steps()[len(b.Steps())-1].Result, &z)
		if z.Output != "g155" {
			t.Errorf("trial %d: z output %q, want g155", i, z.Output)
		}
	}
}

func TestResumeRefusesChangedPlan(t *testing.T) {
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	src, _ := os.ReadFile(testdata("runaway.yaml"))
	os.WriteFile(plan, src, 0o644)
	r := runCLI(t, wd, "run", plan)
	if r.code != 1 {
		t.Fatalf("exit %d", r.code)
	}
	bb := blackboardPath(t, r.stdout)
	os.WriteFile(plan, append(src, []byte("# edited\n")...), 0o644)
	r = runCLI(t, wd, "resume", bb)
	if r.code != 2 || !strings.Contains(r.stderr, "changed since run") || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("resume of a changed plan: exit %d %q", r.code, r.stderr)
	}
	r = runCLI(t, wd, "resume", bb, "--force")
	if r.code != 1 || !strings.Contains(r.stderr, "max_visits") {
		t.Fatalf("resume --force: exit %d %q", r.code, r.stderr)
	}
}

// TestResumeEndsARunKilledAfterItsLastStep: a run killed after its last
// step was saved and before its end was keeps the status "running" in
// its file. Resuming it ends it as the run would have ended (succeeded,
// or failed where a branch chose fail), with the run's exit code; before,
// the resume said "no step left to run", exited 0 and left it "running"
// for good (found by TestKillThenResume, one trial in a few hundred).
func TestResumeEndsARunKilledAfterItsLastStep(t *testing.T) {
	for _, tc := range []struct {
		name, plan string
		code       int
		status     string
		errText    string
	}{
		{"last step ran", "version: 1\nsteps:\n  - {label: a, type: board, op: write, key: k, value: v}\n  - {label: b, type: board, op: write, key: k2, value: w}\n",
			exitOK, "succeeded", ""},
		{"a branch chose end", "version: 1\nsteps:\n  - {label: a, type: board, op: write, key: k, value: v}\n  - label: b\n    type: branch\n    cases:\n      - {when: 'true', goto: end}\n  - {label: c, type: board, op: write, key: k3, value: x}\n",
			exitOK, "succeeded", ""},
		{"a branch chose fail", "version: 1\nsteps:\n  - {label: a, type: board, op: write, key: k, value: v}\n  - label: b\n    type: branch\n    cases:\n      - {when: 'true', goto: fail}\n  - {label: c, type: board, op: write, key: k3, value: x}\n",
			exitFailed, "failed", "the branch chose fail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			plan := filepath.Join(wd, "plan.yaml")
			if err := os.WriteFile(plan, []byte(tc.plan), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(wd, "bb.json")
			if r := runCLI(t, wd, "run", plan, "--out", out, "-q"); r.code != tc.code {
				t.Fatalf("run: exit %d, want %d: %s", r.code, tc.code, r.stderr)
			}
			ran, err := board.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			// The file as a kill between the last step and the run's end
			// leaves it.
			b, err := board.Open(out, board.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.UpdateRun(func(run *board.Run) { run.Status, run.Error, run.FinishedAt = board.StatusRunning, "", nil }); err != nil {
				t.Fatal(err)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			r := runCLI(t, wd, "resume", out, "-q")
			if r.code != tc.code {
				t.Errorf("resume: exit %d, want %d: %s", r.code, tc.code, r.stderr)
			}
			got, err := board.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			run := got.Run()
			if run.Status != tc.status || !strings.Contains(run.Error, tc.errText) || run.FinishedAt == nil {
				t.Errorf("after the resume: status %q, error %q, finished %v; want %q, %q", run.Status, run.Error, run.FinishedAt, tc.status, tc.errText)
			}
			if len(got.Steps()) != len(ran.Steps()) {
				t.Errorf("the resume ran steps again: %d records, the run made %d", len(got.Steps()), len(ran.Steps()))
			}
			// Ended once: a second resume has nothing to do.
			if r := runCLI(t, wd, "resume", out, "-q"); r.code != exitOK || !strings.Contains(r.stderr, "resume") {
				t.Errorf("second resume: exit %d: %s", r.code, r.stderr)
			}
		})
	}
}

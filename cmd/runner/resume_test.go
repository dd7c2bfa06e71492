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

	"github.com/planrunner/runner/board"
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
	for i := 0; i < trials; i++ {
		wd := t.TempDir()
		out := filepath.Join(wd, "bb.json")
		cmd := exec.Command(binary, "run", testdata("crash.yaml"), "--out", out, "-q")
		cmd.Dir = wd
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait for the run to begin (a loaded machine starts processes
		// slowly), then kill it at a random moment.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			if _, err := os.Stat(out); err == nil {
				break
			}
		}
		time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond)
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

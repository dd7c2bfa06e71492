package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/runs"
)

// A run killed with SIGKILL while many steps of a parallel group run:
// while it lived, the running file listed every one of them; once it is
// dead, `runner runs` says it was interrupted and nothing is listed
// running; the resume runs again exactly the steps that had not ended.
func TestKilledWithManyStepsRunning(t *testing.T) {
	const slow, quick = 60, 20
	var plan strings.Builder
	plan.WriteString("version: 1\nlimits: {max_steps: 1000}\nsteps:\n  - label: all\n    parallel:\n")
	for i := 0; i < quick; i++ {
		fmt.Fprintf(&plan, "      - {label: q%d, type: command, run: 'true'}\n", i)
	}
	for i := 0; i < slow; i++ {
		// Waits (a minute at most) until the test makes the file resumed.
		fmt.Fprintf(&plan, "      - {label: s%d, type: command, run: 'i=0; while [ ! -e resumed ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done'}\n", i)
	}
	wd := t.TempDir()
	os.WriteFile(filepath.Join(wd, "plan.yaml"), []byte(plan.String()), 0o644)
	cmd := exec.Command(binary, "run", "plan.yaml", "-q")
	cmd.Dir = wd
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); os.WriteFile(filepath.Join(wd, "resumed"), nil, 0o644) })
	var bb string
	var running []runs.RunningStep
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the slow steps were never all listed running: %d visits are", len(running))
		}
		if bb == "" {
			found, _ := filepath.Glob(filepath.Join(wd, ".runner", "runs", "*", "blackboard.json"))
			if len(found) == 0 {
				continue
			}
			bb = found[0]
		}
		if running = runs.ReadRunning(bb); len(running) == slow+1 {
			break
		}
	}
	// The group, then its children.
	for i, s := range running {
		if i == 0 && s.Label == "all" && s.Parent == "" {
			continue
		}
		if i == 0 || !strings.HasPrefix(s.Label, "s") || s.Visit != 1 || s.Parent != "all" {
			t.Fatalf("listed running: %+v", s)
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	if got := runs.ReadRunning(bb); got != nil {
		t.Errorf("the killed run still lists %d steps running", len(got))
	}
	r := runCLI(t, wd, "runs", "--json")
	var list []runs.Summary
	if err := json.Unmarshal([]byte(r.stdout), &list); r.code != 0 || err != nil || len(list) != 1 {
		t.Fatalf("runs --json: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if list[0].Status != board.StatusInterrupted || list[0].Live || list[0].Steps != quick {
		t.Fatalf("the killed run is listed %+v, want interrupted with its %d quick steps", list[0], quick)
	}

	os.WriteFile(filepath.Join(wd, "resumed"), nil, 0o644)
	if r := runCLI(t, wd, "resume", "latest", "-q"); r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	b, err := board.Load(bb)
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]int{}
	for _, s := range b.Steps() {
		if s.Status == board.StatusSucceeded {
			done[s.Label]++
		}
	}
	if b.Run().Status != board.StatusSucceeded || len(done) != slow+quick+1 {
		t.Fatalf("after the resume: %s, %d steps succeeded, want %d", b.Run().Status, len(done), slow+quick+1)
	}
	for l, n := range done {
		if n != 1 {
			t.Errorf("%s succeeded %d times", l, n)
		}
	}
	if exists(runs.RunningPath(bb)) {
		t.Error("the running file is left after the resume ended")
	}
}

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/runs"
)

// Runs in every state are listed with what a user needs to find them, and
// every command that takes a saved run takes its id, a prefix, its
// directory or "latest".
func TestRunsListsAndNamesRuns(t *testing.T) {
	wd := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(wd, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ok.yaml", "version: 1\nname: ok\nagents:\n  bot: {provider: script, responses: [\"fine\"]}\nsteps:\n  - {label: ask, type: llm, agent: bot, prompt: \"how are you?\"}\n")
	write("fail.yaml", "version: 1\nname: fail\nsteps:\n  - {label: boom, type: command, run: \"exit 3\"}\n")
	write("wait.yaml", "version: 1\nname: wait\nsteps:\n  - {label: approve, type: input, prompt: \"Ship it?\", form: {properties: {ok: {type: boolean}}, required: [ok]}}\n")
	write("slow.yaml", "version: 1\nname: slow\nsteps:\n  - {label: hold, type: command, run: \"while [ ! -e go ]; do sleep 0.05; done\"}\n")

	if r := runCLI(t, wd, "runs"); r.code != 0 || !strings.Contains(r.stderr, "no runs under") {
		t.Fatalf("runs with none: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, wd, "report", "latest"); r.code != 2 || !strings.Contains(r.stderr, "no runs under") {
		t.Fatalf("latest with no runs: exit %d %q", r.code, r.stderr)
	}
	for _, p := range []struct {
		plan string
		code int
	}{{"ok.yaml", 0}, {"fail.yaml", 1}, {"wait.yaml", 4}} {
		if r := runCLI(t, wd, "run", p.plan, "-q"); r.code != p.code {
			t.Fatalf("run %s: exit %d, want %d\n%s", p.plan, r.code, p.code, r.stderr)
		}
	}
	// One run killed with kill -9, one live: the file says running for both.
	start := func() (*exec.Cmd, string) {
		cmd := exec.Command(binary, "run", "slow.yaml", "--log-format", "json")
		cmd.Dir = wd
		out, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		// The first event says where the run is, before any step ends.
		var first struct {
			Blackboard string `json:"blackboard"`
			Message    string `json:"message"`
		}
		if err := json.NewDecoder(out).Decode(&first); err != nil || first.Blackboard == "" || first.Message != "run started" {
			t.Fatalf("the run's first event does not say where it is: %+v %v", first, err)
		}
		for deadline := time.Now().Add(30 * time.Second); !exists(first.Blackboard); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the slow step never started")
			}
		}
		return cmd, first.Blackboard
	}
	killed, _ := start()
	killed.Process.Signal(syscall.SIGKILL)
	killed.Wait()
	live, _ := start()

	r := runCLI(t, wd, "runs", "--json")
	var list []runs.Summary
	if err := json.Unmarshal([]byte(r.stdout), &list); r.code != 0 || err != nil {
		t.Fatalf("runs --json: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	want := []struct{ plan, status string }{{"ok.yaml", "succeeded"}, {"fail.yaml", "failed"}, {"wait.yaml", "waiting"}, {"slow.yaml", "interrupted"}, {"slow.yaml", "running"}}
	if len(list) != len(want) {
		t.Fatalf("runs --json lists %d runs, want %d:\n%s", len(list), len(want), r.stdout)
	}
	for i, w := range want {
		got := list[i]
		if got.Plan != w.plan || got.Status != w.status || got.Live != (w.status == "running") {
			t.Errorf("run %d: plan %q status %q live %v; want %s %s", i, got.Plan, got.Status, got.Live, w.plan, w.status)
		}
	}
	if list[0].Usage.Calls != 1 || list[0].Usage.InputTokens == 0 || list[0].Steps != 1 || list[1].Failed != 1 {
		t.Errorf("counts: %+v", list[:2])
	}

	r = runCLI(t, wd, "runs")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(lines[5], "running (live)") || !strings.Contains(lines[2], "1 (1 failed)") {
		t.Errorf("runs table:\n%s", r.stdout)
	}
	if r := runCLI(t, wd, "runs", "--status", "failed"); strings.Count(r.stdout, "\n") != 2 || !strings.Contains(r.stdout, "fail.yaml") {
		t.Errorf("runs --status failed:\n%s", r.stdout)
	}
	if r := runCLI(t, wd, "runs", "--plan", "slow", "--status", "interrupted"); strings.Count(r.stdout, "\n") != 2 {
		t.Errorf("runs --plan slow --status interrupted:\n%s", r.stdout)
	}
	// A filter that matches nothing says so, not that there are no runs.
	if r := runCLI(t, wd, "runs", "--plan", "ok", "--status", "failed"); r.code != 0 || r.stdout != "" ||
		!strings.Contains(r.stderr, `match --status failed and --plan "ok"`) {
		t.Errorf("runs --plan ok --status failed: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, wd, "runs", "--status", "done"); r.code != 2 {
		t.Errorf("runs --status done: exit %d, want 2", r.code)
	}

	// Naming a run: its id, a prefix of it, its directory, latest.
	ok, wait := list[0], list[2]
	for _, name := range []string{ok.ID, strings.ToLower(ok.ID[:len(ok.ID)-3]), filepath.Dir(ok.Path), ok.Path} {
		if r := runCLI(t, wd, "board", name, "list"); r.code != 0 {
			t.Errorf("board %s list: exit %d %q", name, r.code, r.stderr)
		}
		if r := runCLI(t, wd, "report", name, "-o", "-"); r.code != 0 || !strings.Contains(r.stdout, "how are you?") {
			t.Errorf("report %s: exit %d %q", name, r.code, r.stderr)
		}
	}
	if r := runCLI(t, wd, "answer", wait.ID[:20], "--step", "approve", "--set", "ok=true"); r.code != 0 {
		t.Errorf("answer by id prefix: exit %d %q", r.code, r.stderr)
	}
	if r := runCLI(t, wd, "resume", wait.ID); r.code != 0 {
		t.Errorf("resume by id: exit %d %q", r.code, r.stderr)
	}
	if r := runCLI(t, wd, "replay", ok.ID, "--offline", "-q"); r.code != 0 {
		t.Errorf("replay by id: exit %d %q", r.code, r.stderr)
	}
	if r := runCLI(t, wd, "board", "latest", "list"); r.code != 0 {
		t.Errorf("board latest: exit %d %q", r.code, r.stderr)
	}
	// The ids share their leading characters (same minute): a short
	// prefix is ambiguous and says so; an unknown one says where it looked.
	if r := runCLI(t, wd, "report", ok.ID[:2]); r.code != 2 || !strings.Contains(r.stderr, "give more of the id") {
		t.Errorf("ambiguous prefix: exit %d %q", r.code, r.stderr)
	}
	if r := runCLI(t, wd, "report", "ZZZZ"); r.code != 2 || !strings.Contains(r.stderr, ".runner/runs") {
		t.Errorf("unknown id: exit %d %q", r.code, r.stderr)
	}
	if r := runCLI(t, wd, "report", "missing/bb.json"); r.code != 2 || !strings.Contains(r.stderr, "missing/bb.json") {
		t.Errorf("missing path: exit %d %q", r.code, r.stderr)
	}

	os.WriteFile(filepath.Join(wd, "go"), nil, 0o644)
	if err := live.Wait(); err != nil {
		t.Fatalf("the live run: %v", err)
	}
	if r := runCLI(t, wd, "runs", "--json", "--status", "running"); strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("no run runs now, yet:\n%s", r.stdout)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

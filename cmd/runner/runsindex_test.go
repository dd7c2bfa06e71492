package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/runs"
)

func listJSON(t *testing.T, wd string, args ...string) []runs.Summary {
	t.Helper()
	r := runCLI(t, wd, append([]string{"runs", "--json"}, args...)...)
	var list []runs.Summary
	if err := json.Unmarshal([]byte(r.stdout), &list); r.code != 0 || err != nil {
		t.Fatalf("runs --json %v: exit %d %v\n%s%s", args, r.code, err, r.stdout, r.stderr)
	}
	return list
}

// startSlow starts, in another process, a run of slow.yaml under wd that
// holds until the file "go" exists, and returns once it is saved.
func startSlow(t *testing.T, wd string) *exec.Cmd {
	t.Helper()
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
	var first struct {
		Blackboard string `json:"blackboard"`
	}
	if err := json.NewDecoder(out).Decode(&first); err != nil || first.Blackboard == "" {
		t.Fatalf("the run's first event does not say where it is: %+v %v", first, err)
	}
	for deadline := time.Now().Add(30 * time.Second); !exists(first.Blackboard); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow run never saved its board")
		}
	}
	return cmd
}

var listPlans = map[string]string{
	"ok.yaml":   "version: 1\nname: all good\nsteps:\n  - {label: a, type: command, run: \"true\"}\n",
	"fail.yaml": "version: 1\nname: boom\nsteps:\n  - {label: boom, type: command, run: \"exit 3\"}\n",
	"wait.yaml": "version: 1\nname: ask\nsteps:\n  - {label: approve, type: input, prompt: \"Ship it?\", form: {properties: {ok: {type: boolean}}, required: [ok]}}\n",
	"slow.yaml": "version: 1\nname: slow\nsteps:\n  - {label: hold, type: command, run: \"while [ ! -e go ]; do sleep 0.05; done\"}\n",
}

// Runs started at once by several processes all land in the run index,
// whole; the list read through the index is the list read from the runs
// themselves, with the index lost, damaged, or out of date.
func TestRunsIndexSeveralProcesses(t *testing.T) {
	wd := t.TempDir()
	writeFiles(t, wd, listPlans)
	const n = 6
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			plan := "ok.yaml"
			if i%3 == 2 {
				plan = "fail.yaml"
			}
			cmd := exec.Command(binary, "run", plan, "-q")
			cmd.Dir = wd
			cmd.Run()
			codes[i] = cmd.ProcessState.ExitCode()
		})
	}
	wg.Wait()
	if !slices.Equal(codes, []int{0, 0, 1, 0, 0, 1}) {
		t.Fatalf("exit codes %v", codes)
	}
	index := runs.IndexPath(wd)
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	// Each run noted itself as it started and as it ended, each line whole.
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	ended := map[string]string{}
	for _, l := range lines {
		var e struct{ ID, Status string }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("index line %q: %v", l, err)
		}
		ended[e.ID] = e.Status
	}
	if len(lines) != 2*n || len(ended) != n {
		t.Fatalf("index has %d lines for %d runs, want %d for %d:\n%s", len(lines), len(ended), 2*n, n, data)
	}
	want := listJSON(t, wd)
	if len(want) != n {
		t.Fatalf("%d runs listed, want %d", len(want), n)
	}
	for _, s := range want {
		if ended[s.ID] != s.Status {
			t.Errorf("run %s: the index says %q, the run %q", s.ID, ended[s.ID], s.Status)
		}
		if s.Name == "" || s.Name != map[string]string{"ok.yaml": "all good", "fail.yaml": "boom"}[s.Plan] {
			t.Errorf("run %s of %s: name %q", s.ID, s.Plan, s.Name)
		}
	}
	cases := []struct {
		name  string
		spoil func()
	}{
		{"lost", func() { os.Remove(index) }},
		{"cut mid-line by a crash", func() { os.WriteFile(index, data[:len(data)-40], 0o600) }},
		{"garbage", func() { os.WriteFile(index, []byte("{\"v\":1,\"id\":\"x\nnot json\n\x00\x01"), 0o600) }},
		{"an entry of other files, saying otherwise", func() {
			last := lines[len(lines)-1]
			lie := strings.NewReplacer(`"status":"succeeded"`, `"status":"failed"`, `"status":"failed"`, `"status":"succeeded"`,
				`"k":[`, `"k":[1`).Replace(last)
			if lie == last || !strings.Contains(last, `"k":[`) {
				t.Fatalf("no lie told in %s", last)
			}
			os.WriteFile(index, append(slices.Clip(data), []byte(lie+"\n")...), 0o600)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.spoil()
			for range 2 { // read from the runs, then from the index it mended
				got := listJSON(t, wd)
				if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w {
					t.Errorf("listed\n%s\nwant\n%s", g, w)
				}
			}
		})
	}
}

// --status, --plan (a path or a name) and --limit (the newest N) choose
// the runs listed, through the index as without it.
func TestRunsFiltersAndLimits(t *testing.T) {
	wd := t.TempDir()
	writeFiles(t, wd, listPlans)
	for _, p := range []string{"ok.yaml", "fail.yaml", "ok.yaml", "wait.yaml", "fail.yaml", "ok.yaml"} {
		runCLI(t, wd, "run", p, "-q")
	}
	all := listJSON(t, wd)
	if len(all) != 6 {
		t.Fatalf("%d runs", len(all))
	}
	ids := func(list []runs.Summary) string {
		var out []string
		for _, s := range list {
			out = append(out, s.ID)
		}
		return strings.Join(out, " ")
	}
	cases := []struct {
		args []string
		want []runs.Summary
	}{
		{[]string{"--status", "failed"}, []runs.Summary{all[1], all[4]}},
		{[]string{"--plan", "boom"}, []runs.Summary{all[1], all[4]}},
		{[]string{"--plan", "ok.y"}, []runs.Summary{all[0], all[2], all[5]}},
		{[]string{"--limit", "2"}, all[4:]},
		{[]string{"--limit", "2", "--status", "succeeded"}, []runs.Summary{all[2], all[5]}},
		{[]string{"--status", "waiting", "--limit", "5"}, []runs.Summary{all[3]}},
		{[]string{"--status", "running"}, nil},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			for _, lost := range []bool{false, true} {
				if lost {
					os.Remove(runs.IndexPath(wd))
				}
				if got := listJSON(t, wd, c.args...); ids(got) != ids(c.want) {
					t.Errorf("index lost %v: listed %s, want %s", lost, ids(got), ids(c.want))
				}
			}
		})
	}
	if r := runCLI(t, wd, "runs", "--limit", "-1"); r.code != 2 {
		t.Errorf("--limit -1: exit %d", r.code)
	}
}

// runner runs prune removes what its rules say, oldest first, and never a
// run that is live in another process or waits for an answer; with no
// rule it takes the user's policy from the config.
func TestRunsPrune(t *testing.T) {
	wd := t.TempDir()
	writeFiles(t, wd, listPlans)
	for _, p := range []string{"ok.yaml", "wait.yaml", "fail.yaml", "ok.yaml"} {
		runCLI(t, wd, "run", p, "-q")
	}
	live := startSlow(t, wd)
	runCLI(t, wd, "run", "ok.yaml", "-q")
	all := listJSON(t, wd)
	statuses := func(list []runs.Summary) string {
		var out []string
		for _, s := range list {
			out = append(out, s.Plan+":"+s.Status)
		}
		return strings.Join(out, " ")
	}
	if got := statuses(all); got != "ok.yaml:succeeded wait.yaml:waiting fail.yaml:failed ok.yaml:succeeded slow.yaml:running ok.yaml:succeeded" {
		t.Fatalf("runs: %s", got)
	}
	// The failed run must be older than the --older-than 1s below.
	time.Sleep(time.Until(all[2].StartedAt.Add(1100 * time.Millisecond)))
	cfg := filepath.Join(wd, "config.yaml")
	cases := []struct {
		name   string
		args   []string
		config string
		code   int
		left   string
	}{
		{"no rule, no policy", nil, "", 2, ""},
		{"a status never pruned", []string{"--keep", "1", "--status", "waiting"}, "", 2, ""},
		{"dry run", []string{"--keep", "1", "--dry-run"}, "", 0, ""},
		{"failed runs", []string{"--older-than", "1s", "--status", "failed"}, "", 0,
			"ok.yaml:succeeded wait.yaml:waiting ok.yaml:succeeded slow.yaml:running ok.yaml:succeeded"},
		{"the policy in the config", nil, "runs:\n  prune: {keep: 2, status: [succeeded]}\n", 0,
			"wait.yaml:waiting ok.yaml:succeeded slow.yaml:running ok.yaml:succeeded"},
		{"a config that does not read", nil, "runs:\n  prune: {kept: 2}\n", 2, ""},
		{"everything it may", []string{"--keep", "1"}, "", 0,
			"wait.yaml:waiting slow.yaml:running ok.yaml:succeeded"},
	}
	left := statuses(all)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.WriteFile(cfg, []byte(c.config), 0o644)
			cmd := exec.Command(binary, append([]string{"runs", "prune"}, c.args...)...)
			cmd.Dir, cmd.Env = wd, append(os.Environ(), "RUNNER_CONFIG="+cfg)
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != c.code {
				t.Fatalf("exit %d, want %d\n%s", code, c.code, out)
			}
			if c.left != "" {
				left = c.left
			}
			if got := statuses(listJSON(t, wd)); got != left {
				t.Errorf("left %s\nwant %s\n%s", got, left, out)
			}
		})
	}
	os.WriteFile(filepath.Join(wd, "go"), nil, 0o644)
	if err := live.Wait(); err != nil {
		t.Fatalf("the live run, kept by prune: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(wd, ".runner"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "pruning-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

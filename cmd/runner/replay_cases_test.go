package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// recordAndReplay runs plan (its source) in a fresh workdir, optionally
// resumes it, then replays the recording with args (--offline by default)
// and returns the replay's result. wantRun is the exit code the run must
// end with.
func recordAndReplay(t *testing.T, src string, wantRun int, env []string, replayArgs ...string) (result, string, string) {
	t.Helper()
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(src), 0o644)
	env = append(env, "PATH="+os.Getenv("PATH"))
	r := runEnv(t, wd, env, "run", plan, "-q")
	if r.code != wantRun {
		t.Fatalf("run: exit %d, want %d: %s", r.code, wantRun, r.stderr)
	}
	recorded := blackboardPath(t, r.stdout)
	if len(replayArgs) == 0 {
		replayArgs = []string{"--offline"}
	}
	out := filepath.Join(t.TempDir(), "replay.json")
	args := append([]string{"replay", recorded, "--out", out}, replayArgs...)
	return runEnv(t, wd, env, args...), recorded, out
}

func wantMatch(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code || strings.Contains(r.stderr, "diverged") {
		t.Fatalf("replay: exit %d, want %d without a divergence:\n%s", r.code, code, r.stderr)
	}
}

// A model call retried after a 429 is transport noise: recorded, never
// compared.
func TestReplayRetriedModelCall(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
	}))
	defer srv.Close()
	src := `version: 1
name: retried
agents:
  a: {provider: openai, model: gpt-4o-mini, base_url: "` + srv.URL + `/v1"}
steps:
  - {label: ask, type: llm, agent: a, prompt: "Say hello"}
`
	r, recorded, _ := recordAndReplay(t, src, 0, []string{"OPENAI_API_KEY=sk-test"})
	data, _ := os.ReadFile(recorded)
	if !strings.Contains(string(data), `"retries":1`) {
		t.Fatalf("the run was not retried: %s", data)
	}
	wantMatch(t, r, 0)
}

// A parallel group that failed under the default fail_fast: the siblings
// the failure canceled are canceled again in the replay.
func TestReplayFailFastGroup(t *testing.T) {
	src := `version: 1
name: failfast
steps:
  - label: group
    max_concurrency: 2
    parallel:
      - {label: slow, type: command, run: "sleep 5; echo slow"}
      - {label: boom, type: command, run: "sleep 0.2; echo boom; exit 1"}
      - {label: later, type: command, run: "echo later"}
`
	r, _, _ := recordAndReplay(t, src, 1, nil)
	wantMatch(t, r, 1)
}

// A run that hit limits.timeout replays to the same timeout.
func TestReplayRunTimeout(t *testing.T) {
	src := `version: 1
name: timeout
limits: {timeout: 1s}
steps:
  - {label: quick, type: command, run: "echo quick"}
  - {label: slow, type: command, run: "sleep 5"}
  - {label: never, type: command, run: "echo never"}
`
	r, _, _ := recordAndReplay(t, src, 1, nil)
	wantMatch(t, r, 1)
}

// A run that failed and was then resumed replays as one run, failure and
// resume included.
func TestReplayResumedRun(t *testing.T) {
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
name: resumed
steps:
  - {label: first, type: command, run: "echo first"}
  - {label: flaky, type: command, run: "if [ -f ok ]; then echo fixed; else touch ok; echo broken; exit 1; fi"}
  - {label: last, type: command, run: "echo last"}
`), 0o644)
	r := runCLI(t, wd, "run", plan, "-q")
	if r.code != 1 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
	recorded := blackboardPath(t, r.stdout)
	if r = runCLI(t, wd, "resume", recorded, "-q"); r.code != 0 {
		t.Fatalf("resume: exit %d %s", r.code, r.stderr)
	}
	r = runCLI(t, wd, "replay", recorded, "--offline", "--out", filepath.Join(t.TempDir(), "r.json"))
	wantMatch(t, r, 0)
}

// A read whose result depended on a TTL running out reads the same in
// the replay, however fast the replay goes.
func TestReplayTTLExpiry(t *testing.T) {
	src := `version: 1
name: ttl
steps:
  - {label: put, type: board, op: write, key: token, value: abc, ttl: 1s}
  - {label: wait, type: command, run: "sleep 1.3"}
  - {label: get, type: board, op: read, key: token}
  - label: decide
    type: branch
    cases:
      - {when: 'steps.get.output == nil', goto: expired}
    default: fail
  - {label: expired, type: command, run: "echo expired"}
`
	r, _, _ := recordAndReplay(t, src, 0, nil)
	wantMatch(t, r, 0)
}

// A replay with --workdir in the same checkout: the backup folder the
// replay's apply_diff invents is its own, not compared with the recorded one.
func TestReplayWorkdirSameCheckout(t *testing.T) {
	src := "version: 1\nname: apply\nsteps:\n" +
		"  - {label: reset, type: command, run: \"printf 'a\\\\nb\\\\nc\\\\n' > f.txt\"}\n" +
		"  - label: apply\n    type: apply_diff\n    diff: |\n" +
		"      --- a/f.txt\n      +++ b/f.txt\n      @@ -1,3 +1,3 @@\n       a\n      -b\n      +B\n       c\n" +
		"  - {label: show, type: command, run: cat f.txt}\n"
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(src), 0o644)
	r := runCLI(t, wd, "run", plan, "-q")
	if r.code != 0 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
	recorded := blackboardPath(t, r.stdout)
	data, _ := os.ReadFile(recorded)
	var saved struct {
		Steps []struct {
			Label  string          `json:"label"`
			Result json.RawMessage `json:"result"`
		} `json:"steps"`
	}
	json.Unmarshal(data, &saved)
	for i := 0; i < 2; i++ { // twice: the second replay finds both earlier backups
		r = runCLI(t, wd, "replay", recorded, "--workdir", wd, "--out", filepath.Join(t.TempDir(), "r.json"))
		wantMatch(t, r, 0)
	}
	if got, _ := os.ReadFile(filepath.Join(wd, "f.txt")); string(got) != "a\nB\nc\n" {
		t.Errorf("f.txt = %q", got)
	}
}

// replayMatches replays a recording offline and fails unless it matched.
func replayMatches(t *testing.T, recorded string) {
	t.Helper()
	r := runCLI(t, t.TempDir(), "replay", recorded, "--offline", "--json", "--out", filepath.Join(t.TempDir(), "r.json"))
	var out replayOutcome
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || !out.Matched || r.code == exitDiverged {
		t.Fatalf("replay: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
}

// Every plan under testdata that runs on its own is recorded and
// replayed offline (slow.yaml waits to be interrupted: it is, and its
// interrupted recording replays up to where it ends; live.yaml waits
// for outside writes: it gets them, and the replay makes them again).
func TestTestdataPlansReplay(t *testing.T) {
	plans, _ := filepath.Glob(testdata("*.yaml"))
	for _, plan := range plans {
		name := filepath.Base(plan)
		t.Run(name, func(t *testing.T) {
			wd := t.TempDir()
			bb := filepath.Join(wd, "bb.json")
			switch name {
			case "slow.yaml":
				cmd := exec.Command(binary, "run", plan, "-q", "--out", bb)
				cmd.Dir = wd
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < 500; i++ {
					if _, err := os.Stat(filepath.Join(wd, "started")); err == nil {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				cmd.Process.Signal(os.Interrupt)
				cmd.Wait()
			case "live.yaml":
				cmd, out, _ := startLive(t, wd, bb)
				for i, kv := range []string{"shared=1", "w7-k42={\"j\":42}", "shared=2"} {
					k, v, _ := strings.Cut(kv, "=")
					if r := runCLI(t, wd, "board", bb, "put", k, v); r.code != 0 {
						t.Fatalf("put %d: %s", i, r.stderr)
					}
				}
				os.WriteFile(filepath.Join(wd, "done"), nil, 0o644)
				if err := cmd.Wait(); err != nil {
					t.Fatalf("run: %v %s", err, out)
				}
			case "openai.yaml": // a template for a fake server's address
				srv, _, _ := fakeOpenAI(t)
				r := runEnv(t, wd, []string{"PATH=" + os.Getenv("PATH"), "OPENAI_API_KEY=sk-test"},
					"run", openaiPlan(t, wd, srv.URL), "-q", "--out", bb)
				if r.code != 0 {
					t.Fatalf("run: %s", r.stderr)
				}
			default:
				os.WriteFile(filepath.Join(wd, "go"), nil, 0o644) // review-live.yaml's sibling ends at once
				r := runCLI(t, wd, "run", plan, "-q", "--out", bb)
				if r.code == exitUsage {
					if !strings.Contains(name, "mistakes") {
						t.Fatalf("run: %s", r.stderr)
					}
					return // a plan made to be refused
				}
			}
			replayMatches(t, bb)
		})
	}
}

// A replay still catches what changed: a prompt, a command's result, a TTL.
func TestReplayCatchesChanges(t *testing.T) {
	src := `version: 1
name: changes
agents:
  bot: {provider: script, responses: [one, two]}
steps:
  - {label: put, type: board, op: write, key: token, value: abc, ttl: 1s}
  - {label: ask, type: llm, agent: bot, prompt: "Summarise the notes"}
  - {label: wait, type: command, run: "sleep 1.3; cat notes.txt"}
  - {label: get, type: board, op: read, key: token}
`
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(src), 0o644)
	os.WriteFile(filepath.Join(wd, "notes.txt"), []byte("notes\n"), 0o644)
	r := runCLI(t, wd, "run", plan, "-q")
	if r.code != 0 {
		t.Fatalf("run: %s", r.stderr)
	}
	recorded := blackboardPath(t, r.stdout)
	replayMatches(t, recorded)
	for _, c := range []struct {
		name, from, to string
		world          string // new content of notes.txt: replay in the workdir
		kind, label    string
	}{
		{"prompt", "Summarise the notes", "Summarise the notes briefly", "", "request", "ask"},
		{"ttl", "ttl: 1s", "ttl: 1h", "", "result", "get"},
		{"command result", "", "", "other notes\n", "result", "wait"},
	} {
		t.Run(c.name, func(t *testing.T) {
			changed := filepath.Join(wd, "changed.yaml")
			os.WriteFile(changed, []byte(strings.Replace(src, c.from, c.to, 1)), 0o644)
			args := []string{"replay", recorded, "--plan", changed, "--json", "--out", filepath.Join(t.TempDir(), "r.json")}
			if c.world != "" {
				os.WriteFile(filepath.Join(wd, "notes.txt"), []byte(c.world), 0o644)
				args = append(args, "--workdir", wd)
			} else {
				args = append(args, "--offline")
			}
			r := runCLI(t, wd, args...)
			var out replayOutcome
			json.Unmarshal([]byte(r.stdout), &out)
			if r.code != exitDiverged || out.Divergence == nil || out.Divergence.Kind != c.kind || out.Divergence.Label != c.label || out.Divergence.Diff == "" {
				t.Fatalf("exit %d, want 3 with a %s divergence at %s: %s %s", r.code, c.kind, c.label, r.stdout, r.stderr)
			}
		})
	}
}

// A run killed after a parallel group's last child was recorded and
// before the group's own record: the resume finishes the group (it runs
// the failed child again), and the replay follows it, ending the killed
// part after the children instead of running past the group.
func TestReplayKilledBetweenChildrenAndGroup(t *testing.T) {
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
name: killed-in-group
steps:
  - label: g
    parallel:
      - {label: a, type: command, run: "echo a"}
      - {label: b, type: command, run: "echo b; exit 1"}
  - {label: after, type: command, run: "echo after"}
`), 0o644)
	bb := filepath.Join(wd, "bb.json")
	if r := runCLI(t, wd, "run", plan, "-q", "--out", bb); r.code != 1 {
		t.Fatalf("run: exit %d, want 1\n%s", r.code, r.stderr)
	}
	// What a kill at that moment leaves: the children's records, not the
	// group's, and the run still running.
	var saved map[string]any
	data, _ := os.ReadFile(bb)
	if err := json.Unmarshal(data, &saved); err != nil {
		t.Fatal(err)
	}
	var steps []any
	for _, s := range saved["steps"].([]any) {
		if s.(map[string]any)["label"] != "g" {
			steps = append(steps, s)
		}
	}
	var entries []any
	for _, e := range saved["entries"].([]any) {
		if e.(map[string]any)["label"] != "g" {
			entries = append(entries, e)
		}
	}
	run := saved["run"].(map[string]any)
	run["status"], run["finished_at"] = "running", nil
	delete(run, "error")
	saved["steps"], saved["entries"] = steps, entries
	data, _ = json.Marshal(saved)
	os.WriteFile(bb, data, 0o644)

	if r := runCLI(t, wd, "resume", bb, "-q"); r.code != 1 {
		t.Fatalf("resume: exit %d, want 1 (b fails again)\n%s", r.code, r.stderr)
	}
	replayMatches(t, bb)
}

// A step that fails before it makes its usual result (a dir that does not
// exist, a diff file that cannot be read, a script with a NUL byte, an
// environment that cannot be passed) saves a result with no fields; with
// continue_on_error the run goes on and succeeds. An offline replay serves
// that result and must match it, as must a replay in the same workdir that
// runs the steps again; and the next step sees the same zero fields. The
// cases are steps of one plan (one run, two replays: a divergence names
// the step, and so the case).
func TestReplayStepsThatFailBeforeStarting(t *testing.T) {
	tests := []struct{ name, step string }{
		{"command dir missing", `{type: command, run: "echo hi", dir: nosuch}`},
		{"command dir is a file", `{type: command, run: "echo hi", dir: plan.yaml}`},
		{"command dir from an expression", `{type: command, run: "echo hi", dir: '${{ "no" + "such" }}'}`},
		{"command with a NUL byte in its script", `{type: command, run: 'echo ${{ vars.nul }}'}`},
		{"command whose env cannot be passed", `{type: command, run: "echo hi", env: {X: '${{ vars.nul }}'}}`},
		{"command with retries", `{type: command, run: "echo hi", dir: nosuch, retry: {max: 2, backoff: 1ms}}`},
		{"command with a timeout", `{type: command, run: "echo hi", dir: nosuch, timeout: 1m}`},
		{"test dir missing", `{type: test, framework: go, dir: nosuch}`},
		{"test with a NUL byte in its command", `{type: test, framework: generic, command: 'echo ${{ vars.nul }}'}`},
		{"apply_diff diff_file missing", `{type: apply_diff, diff_file: nosuch.diff}`},
		{"apply_diff dir missing", `{type: apply_diff, dir: nosuch, diff: "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n"}`},
		{"board key empty", `{type: board, op: write, key: '${{ "" }}', value: x}`},
		{"in a parallel group", `{parallel: [{label: INNER, type: command, run: "echo hi", dir: nosuch, continue_on_error: true}, {label: INNER_ok, type: command, run: "echo t"}]}`},
	}
	src := "version: 1\nname: early\nvars: {nul: \"a\\0b\"}\nsteps:\n"
	label := map[string]string{} // the step that fails -> its case
	for i, tc := range tests {
		s, inner := fmt.Sprintf("s%d", i), fmt.Sprintf("s%d_in", i)
		step := strings.ReplaceAll(tc.step, "INNER", inner)
		if strings.Contains(tc.step, "INNER") {
			label[inner] = tc.name
			step = strings.Replace(step, "{", "{label: "+s+", ", 1)
		} else {
			label[s] = tc.name
			step = strings.Replace(step, "{", "{label: "+s+", continue_on_error: true, ", 1)
		}
		src += "  - " + step + "\n"
	}
	// The next step sees each failure as the engine shows it: failed, no
	// output, an error.
	var after []string
	for s := range label {
		after = append(after, fmt.Sprintf(`%s=${{ steps.%s.status }}/${{ steps.%s.output }}/${{ steps.%s.error != "" }}`, s, s, s, s))
	}
	sort.Strings(after)
	src += "  - {label: after, type: command, run: 'echo \"" + strings.Join(after, " ") + "\"'}\n"

	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(src), 0o644)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	r := runEnv(t, wd, env, "run", plan, "-q")
	if r.code != 0 {
		t.Fatalf("run: exit %d, want 0: %s\n%s", r.code, r.stderr, src)
	}
	recorded := blackboardPath(t, r.stdout)
	b, err := board.Load(recorded)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range b.Steps() {
		if name, ok := label[s.Label]; ok && (s.Status != "failed" || s.Error == "") {
			t.Errorf("%s: step %s %s, want failed with an error", name, s.Label, s.Status)
		}
		if s.Label == "after" {
			for l := range label {
				if !strings.Contains(string(s.Result), l+"=failed//true") {
					t.Errorf("%s: the next step saw: %s", label[l], s.Result)
				}
			}
		}
	}
	for _, mode := range [][]string{{"--offline"}, {"--workdir", wd}} {
		out := filepath.Join(t.TempDir(), "replay.json")
		r := runEnv(t, t.TempDir(), env, append([]string{"replay", recorded, "--out", out}, mode...)...)
		if r.code != 0 || strings.Contains(r.stderr, "diverged") {
			which := ""
			for l, name := range label {
				if strings.Contains(r.stderr, "at step "+l+" ") {
					which = name + ": "
				}
			}
			t.Errorf("%sreplay %v: exit %d, want 0 without a divergence:\n%s", which, mode, r.code, r.stderr)
		}
	}
}

// `runner board FILE put/delete` on the saved file of a run no process
// owns (finished, as the README suggests, or failed and later resumed) is
// recorded like a write on the live board: an offline replay makes the
// write again where it came, matches (exit 0) and says where it was.
func TestReplayWritesOnTheSavedFile(t *testing.T) {
	src := `version: 1
name: after
steps:
  - {label: w, type: board, op: write, key: a, value: one}
  - {label: flaky, type: command, run: "if [ -f ok ]; then echo fixed; else touch ok; exit 1; fi"}
  - {label: last, type: command, run: 'echo ${{ board("note") }}'}
`
	tests := []struct {
		name   string
		resume bool // the run fails first; the writes come before the resume
		where  string
	}{
		{"after the run ended", false, "after the run ended (succeeded)"},
		{"before a resume", true, "after the run stopped (failed), before it was resumed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
			plan := filepath.Join(wd, "plan.yaml")
			os.WriteFile(plan, []byte(src), 0o644)
			if !tc.resume {
				os.WriteFile(filepath.Join(wd, "ok"), nil, 0o644)
			}
			r := runEnv(t, wd, env, "run", plan, "-q")
			if want := map[bool]int{false: 0, true: 1}[tc.resume]; r.code != want {
				t.Fatalf("run: exit %d, want %d: %s", r.code, want, r.stderr)
			}
			bb := blackboardPath(t, r.stdout)
			for _, args := range [][]string{
				{"put", "note", "hello"},
				{"put", "a", "two", "--ttl", "1h"}, // overwrites the step's key: a conflict entry too
				{"delete", "a"},
				{"put", "-"},
			} {
				cmd := exec.Command(binary, append([]string{"board", bb}, args...)...)
				cmd.Dir, cmd.Env = wd, env
				cmd.Stdin = strings.NewReader(`{"key": "j", "value": {"n": 1}}` + "\n")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("board %v: %v %s", args, err, out)
				}
			}
			if tc.resume {
				if r := runEnv(t, wd, env, "resume", bb, "-q"); r.code != 0 {
					t.Fatalf("resume: exit %d %s", r.code, r.stderr)
				}
				b, _ := board.Load(bb)
				if s, _ := b.LastStep(); s.Label != "last" || !strings.Contains(string(s.Result), "hello") {
					t.Fatalf("the resumed run did not read the write: %+v", s)
				}
			}
			r = runEnv(t, t.TempDir(), env, "replay", bb, "--offline", "--out", filepath.Join(t.TempDir(), "r.json"))
			wantMatch(t, r, 0)
			if want := "outside writes made again: note, a, delete a, j " + tc.where; !strings.Contains(r.stderr, want) {
				t.Errorf("the summary does not say %q:\n%s", want, r.stderr)
			}
			r = runEnv(t, t.TempDir(), env, "replay", bb, "--offline", "--json", "--out", filepath.Join(t.TempDir(), "r.json"))
			var out replayOutcome
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || !out.Matched || len(out.Outside) != 4 || out.Outside[0].Where != tc.where {
				t.Errorf("--json: exit %d %s", r.code, r.stdout)
			}
		})
	}
}

// A file saved before such writes were recorded still replays: a write
// `runner board put` made after the run's last step is found by its
// meta.via and made again at the end. And when the boards differ for
// another reason, the divergence names the outside writes and where.
func TestReplayOutsideWritesOfOldFilesAndDivergence(t *testing.T) {
	src := "version: 1\nname: old\nsteps:\n  - {label: w, type: board, op: write, key: a, value: one}\n  - {label: last, type: command, run: echo last}\n"
	wd := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(src), 0o644)
	r := runEnv(t, wd, env, "run", plan, "-q")
	if r.code != 0 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
	bb := blackboardPath(t, r.stdout)
	// What `runner board put` wrote before it recorded its writes.
	b, err := board.OpenAppend(bb, board.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"note", "hello"}, {"a", "two"}} {
		if _, err := b.Write(board.WriteOp{Key: kv[0], Value: kv[1], Author: "cli", Role: "user",
			Meta: map[string]any{"via": board.ViaCLI}, ExpectVersion: -1}); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	r = runEnv(t, t.TempDir(), env, "replay", bb, "--offline", "--out", filepath.Join(t.TempDir(), "r.json"))
	wantMatch(t, r, 0)
	if want := "outside writes made again: note, a after the run ended (succeeded; not recorded, found by its meta.via)"; !strings.Contains(r.stderr, want) {
		t.Errorf("the summary does not say %q:\n%s", want, r.stderr)
	}

	// A changed plan whose steps all match but which writes another key.
	if r := runEnv(t, wd, env, "board", bb, "put", "later", "x"); r.code != 0 {
		t.Fatalf("put: %s", r.stderr)
	}
	changed := filepath.Join(wd, "changed.yaml")
	os.WriteFile(changed, []byte(strings.Replace(src, "run: echo last}", "run: echo last, write: {key: extra}}", 1)), 0o644)
	r = runEnv(t, t.TempDir(), env, "replay", bb, "--offline", "--plan", changed, "--out", filepath.Join(t.TempDir(), "r.json"))
	want := "every step matched, but the board's entries differ; outside writes made again: note, a after the run ended (succeeded; not recorded, found by its meta.via); later after the run ended (succeeded)"
	if r.code != exitDiverged || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, want %d saying %q:\n%s", r.code, exitDiverged, want, r.stderr)
	}
}

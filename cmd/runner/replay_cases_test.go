package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
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

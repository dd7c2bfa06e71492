package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	leakKey   = "sk-proj-LEAKME-4f9a8b7c6d5e"
	leakToken = "ghp_DEPLOYTOKEN_77a1b2c3d4"
)

// echoingOpenAI is a hostile provider: it answers by quoting the key back
// (in the text, base64-encoded, and in system_fingerprint), except when
// the prompt says "refuse": then it fails with the key echoed in
// error.type, error.code, error.param and a copy of the request headers.
func echoingOpenAI(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		key := strings.TrimPrefix(auth, "Bearer ")
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if !strings.Contains(string(body), "refuse") {
			fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"m","system_fingerprint":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
				key, "Sure, your key is "+key+" and base64 "+base64.StdEncoding.EncodeToString([]byte(key)))
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		hdr, _ := json.Marshal(r.Header)
		fmt.Fprintf(w, `{"error":{"message":"denied","type":%q,"code":%q,"param":%q,"headers":%s}}`, auth, key, key, hdr)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const leakPlan = `version: 1
vars: {refuse: true}
secrets: [DEPLOY_TOKEN]
agents:
  coder: {provider: openai, model: m, base_url: BASE/v1, api_key_env: MY_OPENAI_KEY}
steps:
  - label: ask
    type: llm
    agent: coder
    prompt: hello
  - label: leak
    type: command
    env: {TOKEN: "${{ secrets.DEPLOY_TOKEN }}"}
    run: |
      echo "inherited: [$MY_OPENAI_KEY] [$OPENAI_API_KEY] [$DEPLOY_TOKEN]"
      echo "passed: $TOKEN"
      echo "to stderr $TOKEN" >&2
      echo ${{ steps.ask.output }}
    write: {key: leaked}
  - label: suite
    type: test
    framework: generic
    command: 'echo "FAIL: TestKey $TOKEN"; exit 1'
    env: {TOKEN: "${{ secrets.MY_OPENAI_KEY }}"}
    continue_on_error: true
  - label: again
    type: llm
    agent: coder
    prompt: "Summarize: ${{ steps.leak.output }}"
  - label: refused
    if: vars.refuse
    type: llm
    agent: coder
    prompt: "refuse this"
`

// TestSecretsWrittenNowhere runs a plan in which a hostile server, a model
// answer, a command and a test suite all print the API key and a plan
// secret, in both log formats and through a resume, then reads every file
// the runs wrote and everything they printed: neither value appears.
func TestSecretsWrittenNowhere(t *testing.T) {
	for _, format := range []string{"json", "console"} {
		t.Run(format, func(t *testing.T) {
			srv := echoingOpenAI(t)
			dir := t.TempDir()
			plan := filepath.Join(dir, "plan.yaml")
			os.WriteFile(plan, []byte(strings.ReplaceAll(leakPlan, "BASE", srv.URL)), 0o644)
			env := append(os.Environ(), "MY_OPENAI_KEY="+leakKey, "OPENAI_API_KEY="+leakKey, "DEPLOY_TOKEN="+leakToken)
			res := runEnv(t, dir, env, "run", plan, "--log-format", format, "--log-level", "debug")
			if res.code != exitFailed {
				t.Fatalf("exit %d, want 1 (the last call fails):\n%s", res.code, res.stderr)
			}
			bb := blackboardPath(t, res.stdout)
			res2 := runEnv(t, dir, env, "resume", bb, "--log-format", format, "--log-level", "debug")
			// A run whose model requests carried a secret (the prompt of
			// "again" quotes the command's output) replays offline from
			// its masked recording, and the replay writes no secret.
			res3 := runEnv(t, dir, env, "run", plan, "--var", "refuse=false", "--log-format", format)
			if res3.code != exitOK {
				t.Fatalf("run without the refusal: exit %d\n%s", res3.code, res3.stderr)
			}
			res4 := runEnv(t, dir, env, "replay", blackboardPath(t, res3.stdout), "--offline", "--log-format", format)
			if res4.code != exitOK || !strings.Contains(res4.stdout+res4.stderr, "matched the recording") {
				t.Errorf("replay: exit %d\n%s%s", res4.code, res4.stdout, res4.stderr)
			}
			printed := res.stdout + res.stderr + res2.stdout + res2.stderr + res3.stdout + res3.stderr + res4.stdout + res4.stderr
			if !strings.Contains(res.stderr, "***") || !finalErrorShown(res.stderr) {
				t.Errorf("the final error line should show the key masked:\n%s", res.stderr)
			}
			scanned := 0
			filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || path == plan {
					return err
				}
				data, _ := os.ReadFile(path)
				checkNoSecret(t, path, string(data))
				scanned++
				return nil
			})
			checkNoSecret(t, "stdout and stderr", printed)
			if scanned < 2 {
				t.Errorf("scanned %d files; the run should have written its board", scanned)
			}
			data, _ := os.ReadFile(bb)
			board := string(data)
			// The command got neither key nor token from runner's
			// environment; the token the step's env passes is masked.
			for _, want := range []string{`inherited: [] [] []`, `passed: ***`, `to stderr ***`, `Sure, your key is ***`, `FAIL: TestKey ***`} {
				if !strings.Contains(board, want) {
					t.Errorf("blackboard.json lacks %q", want)
				}
			}
		})
	}
}

func checkNoSecret(t *testing.T, where, s string) {
	t.Helper()
	for _, secret := range []string{leakKey, leakToken, "LEAKME", "DEPLOYTOKEN",
		base64.StdEncoding.EncodeToString([]byte(leakKey))[:20]} {
		if i := strings.Index(s, secret); i >= 0 {
			t.Errorf("%s holds %q: …%s…", where, secret, s[max(0, i-80):min(len(s), i+80)])
		}
	}
}

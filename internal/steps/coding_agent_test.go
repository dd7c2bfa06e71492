package steps_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/codingagent/agenttest"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/testutil/testtool"
	"github.com/rs/zerolog"
)

const claudeHow = "npm install --prefix DIR @anthropic-ai/claude-code@2.1.332 and set RUNNER_TEST_NODE_MODULES=DIR/node_modules; .ci/install and .ci/run do"

// claudeBinDir is the directory holding the claude CLI of
// RUNNER_TEST_NODE_MODULES.
func claudeBinDir(t *testing.T) string {
	dir := testtool.FromEnv(t, "RUNNER_TEST_NODE_MODULES", "Claude Code", claudeHow)
	bin := filepath.Join(dir, ".bin")
	_, err := os.Stat(filepath.Join(bin, "claude"))
	testtool.Need(t, "claude", err == nil, "not in $RUNNER_TEST_NODE_MODULES/.bin; "+claudeHow)
	testtool.LookPath(t, "node", ".ci/install installs it with apt-get (nodejs)")
	return bin
}

const buggy = "package calc\n\nfunc Add(a, b int) int { return a - b }\n"
const fixed = "package calc\n\nfunc Add(a, b int) int { return a + b }\n"

// fixSession is a scripted session: read calc.go, edit it, finish.
func fixSession(file string) []agenttest.Turn {
	return []agenttest.Turn{
		{Text: "Reading calc.go.", Calls: []agenttest.Call{{Name: "Read", Input: map[string]any{"file_path": file}}}, InputTokens: 1000, OutputTokens: 50},
		{Text: "Add subtracts; fixing.", Calls: []agenttest.Call{{Name: "Edit", Input: map[string]any{"file_path": file, "old_string": "a - b", "new_string": "a + b"}}}, InputTokens: 1200, OutputTokens: 60},
		{Text: "Fixed Add.", InputTokens: 1300, OutputTokens: 20},
	}
}

func claudePlan(url, extra string) string {
	return `version: 1
agents:
  claude:
    provider: anthropic
    model: claude-sonnet-4-5
    base_url: ` + url + `
    api_key_env: TEST_CLAUDE_KEY
    price: {input: 3, output: 15}
steps:
  - label: fix
    type: coding_agent
    cli: claude
    agent: claude
    prompt: Add is wrong; fix it.
` + extra
}

func runCoding(t *testing.T, wd, src string) (*board.Board, error) {
	t.Helper()
	prog, err := engine.Compile("plan.yaml", []byte(src), steps.Registry())
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	b := board.New(board.Run{ID: "run1", Workdir: wd, PlanSource: src})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: wd}
	return b, r.Run(ctx)
}

// stepRec is a step's saved record with its output.
type stepRec struct {
	board.StepRecord
	Output string
}

func result(t *testing.T, b *board.Board, label string) (steps.CodingAgentResult, stepRec) {
	t.Helper()
	for _, s := range b.Steps() {
		if s.Label == label {
			var res steps.CodingAgentResult
			var out struct {
				Output string `json:"output"`
			}
			if err := json.Unmarshal(s.Result, &res); err != nil {
				t.Fatal(err)
			}
			json.Unmarshal(s.Result, &out)
			return res, stepRec{s, out.Output}
		}
	}
	t.Fatalf("step %s did not run", label)
	return steps.CodingAgentResult{}, stepRec{}
}

// TestClaudeCode runs the real Claude Code against a scripted Messages
// API: it reads a file, edits it and finishes; the step meters the usage,
// keeps the key from the CLI and the board, records the diff, and an
// offline replay restores the fix with no CLI on PATH.
func TestClaudeCode(t *testing.T) {
	bin := claudeBinDir(t)
	wd := t.TempDir()
	file := filepath.Join(wd, "calc.go")
	os.WriteFile(file, []byte(buggy), 0o644)
	srv := agenttest.New(fixSession(file))
	defer srv.Close()
	t.Setenv("TEST_CLAUDE_KEY", "sk-test-real-key")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	b, err := runCoding(t, wd, claudePlan(srv.URL, ""))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if got, _ := os.ReadFile(file); string(got) != fixed {
		t.Fatalf("calc.go after the session:\n%s", got)
	}
	res, rec := result(t, b, "fix")
	if rec.Output != "Fixed Add." || res.FinalText != "Fixed Add." || res.ExitReason != "success" {
		t.Errorf("output %q, final_text %q, exit_reason %q", rec.Output, res.FinalText, res.ExitReason)
	}
	var names []string
	for _, c := range res.ToolCalls {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "Read,Edit" {
		t.Errorf("tool calls %v, want Read, Edit", names)
	}
	// 3 answers: 3500 tokens in at $3/M, 130 out at $15/M.
	if res.Usage.InputTokens != 3500 || res.Usage.OutputTokens != 130 || res.Usage.CostUSD != 0.01245 || res.Calls != 3 {
		t.Errorf("usage %+v, calls %d; want 3500 in, 130 out, $0.01245, 3 calls", res.Usage, res.Calls)
	}
	wantDiff := "diff --git a/calc.go b/calc.go\n--- a/calc.go\n+++ b/calc.go\n@@ -1,3 +1,3 @@\n package calc\n \n-func Add(a, b int) int { return a - b }\n+func Add(a, b int) int { return a + b }\n"
	if res.Diff != wantDiff {
		t.Errorf("diff:\n%s\nwant:\n%s", res.Diff, wantDiff)
	}
	if len(res.Files) != 1 || res.Files[0].Path != "calc.go" || res.Files[0].Op != "modify" {
		t.Errorf("files %+v", res.Files)
	}
	for _, r := range srv.Requests() {
		if r.Auth != "sk-test-real-key" {
			t.Errorf("the API got key %q, want the agent's", r.Auth)
		}
	}
	saved, _ := b.Encode()
	if strings.Contains(string(saved), "sk-test-real-key") {
		t.Error("the board holds the API key")
	}
	n := 0
	for _, r := range b.Recordings() {
		if r.Kind == "coding_agent" && r.Call > 0 {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d exchanges recorded, want 3", n)
	}

	// Offline replay: the file is back to buggy, claude is not on PATH
	// and the server is gone.
	os.WriteFile(file, []byte(buggy), 0o644)
	srv.Close()
	t.Setenv("PATH", "/usr/bin:/bin")
	rep, err := replay.Run(context.Background(), b, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.RunErr != nil || rep.Divergence != nil {
		t.Fatalf("replay: %v, divergence %v", rep.RunErr, rep.Divergence)
	}
	if got, _ := os.ReadFile(file); string(got) != fixed {
		t.Fatalf("calc.go after the offline replay:\n%s", got)
	}
	rres, rrec := result(t, rep.Board, "fix")
	if rrec.Output != "Fixed Add." || rres.Diff != wantDiff || rres.Usage != res.Usage {
		t.Errorf("replayed result differs: %q %+v", rrec.Output, rres.Usage)
	}
}

// TestClaudeCodeCostLimit: a session whose second answer crosses the
// step's max_cost_usd is stopped there and fails the step.
func TestClaudeCodeCostLimit(t *testing.T) {
	bin := claudeBinDir(t)
	wd := t.TempDir()
	file := filepath.Join(wd, "calc.go")
	os.WriteFile(file, []byte(buggy), 0o644)
	srv := agenttest.New(fixSession(file))
	defer srv.Close()
	t.Setenv("TEST_CLAUDE_KEY", "sk-test-real-key")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	b, err := runCoding(t, wd, claudePlan(srv.URL, "    max_cost_usd: 0.005\n"))
	if err == nil {
		t.Fatal("the run succeeded past the cost limit")
	}
	res, rec := result(t, b, "fix")
	if rec.Status != engine.StatusFailed || !strings.Contains(rec.Error, "max_cost_usd $0.0050 crossed") {
		t.Errorf("status %s, error %q", rec.Status, rec.Error)
	}
	if res.Stopped == "" || res.Calls != 2 || res.Usage.CostUSD != 0.00825 {
		t.Errorf("stopped %q, calls %d, usage %+v; want stopped after 2 calls at $0.00825", res.Stopped, res.Calls, res.Usage)
	}
	for _, r := range srv.Requests() {
		if r.Turn > 2 {
			t.Errorf("the API got turn %d after the limit", r.Turn)
		}
	}
}

const codexHow = "npm install --prefix DIR @openai/codex@0.171.0 and set RUNNER_TEST_NODE_MODULES=DIR/node_modules; .ci/install and .ci/run do"

// codexBinDir is the directory holding the codex CLI of
// RUNNER_TEST_NODE_MODULES.
func codexBinDir(t *testing.T) string {
	dir := testtool.FromEnv(t, "RUNNER_TEST_NODE_MODULES", "Codex", codexHow)
	bin := filepath.Join(dir, ".bin")
	_, err := os.Stat(filepath.Join(bin, "codex"))
	testtool.Need(t, "codex", err == nil, "not in $RUNNER_TEST_NODE_MODULES/.bin; "+codexHow)
	testtool.LookPath(t, "node", ".ci/install installs it with apt-get (nodejs)")
	return bin
}

// codexSession is a scripted Codex session: look at calc.go, fix it
// with a shell command, finish.
func codexSession() []agenttest.Turn {
	return []agenttest.Turn{
		{Text: "Reading calc.go.", Calls: []agenttest.Call{{Name: "exec_command", Input: map[string]any{"cmd": "cat calc.go"}}}, InputTokens: 2000, OutputTokens: 40},
		{Text: "Add subtracts; fixing.", Calls: []agenttest.Call{{Name: "exec_command", Input: map[string]any{"cmd": "sed -i 's/a - b/a + b/' calc.go"}}}, InputTokens: 2200, OutputTokens: 60},
		{Text: "Fixed Add.", InputTokens: 2300, OutputTokens: 20},
	}
}

func codexPlan(url, extra string) string {
	return `version: 1
agents:
  gpt:
    provider: openai
    model: gpt-5
    base_url: ` + url + `/v1
    api_key_env: TEST_OPENAI_KEY
    price: {input: 1, output: 10}
steps:
  - label: fix
    type: coding_agent
    cli: codex
    agent: gpt
    prompt: Add is wrong; fix it.
` + extra
}

// TestCodex runs the real Codex against a scripted Responses API: it
// runs a command to read the file, one to fix it, and finishes; usage is
// metered by the proxy, the key stays out of the CLI and the board, the
// diff is runner's own and an offline replay restores it without codex.
func TestCodex(t *testing.T) {
	bin := codexBinDir(t)
	wd := t.TempDir()
	file := filepath.Join(wd, "calc.go")
	os.WriteFile(file, []byte(buggy), 0o644)
	srv := agenttest.New(codexSession())
	srv.Model = "gpt-5"
	defer srv.Close()
	t.Setenv("TEST_OPENAI_KEY", "sk-test-real-key")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	b, err := runCoding(t, wd, codexPlan(srv.URL, ""))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if got, _ := os.ReadFile(file); string(got) != fixed {
		t.Fatalf("calc.go after the session:\n%s", got)
	}
	res, rec := result(t, b, "fix")
	if rec.Output != "Fixed Add." || res.ExitReason != "success" || res.Model != "gpt-5" {
		t.Errorf("output %q, exit_reason %q, model %q", rec.Output, res.ExitReason, res.Model)
	}
	if len(res.ToolCalls) != 2 {
		t.Errorf("tool calls %+v, want the two commands", res.ToolCalls)
	}
	// 3 answers: 6500 tokens in at $1/M, 120 out at $10/M.
	if res.Usage.InputTokens != 6500 || res.Usage.OutputTokens != 120 || res.Usage.CostUSD != 0.0077 || res.Calls != 3 {
		t.Errorf("usage %+v, calls %d; want 6500 in, 120 out, $0.0077, 3 calls", res.Usage, res.Calls)
	}
	wantDiff := "diff --git a/calc.go b/calc.go\n--- a/calc.go\n+++ b/calc.go\n@@ -1,3 +1,3 @@\n package calc\n \n-func Add(a, b int) int { return a - b }\n+func Add(a, b int) int { return a + b }\n"
	if res.Diff != wantDiff {
		t.Errorf("diff:\n%s\nwant:\n%s", res.Diff, wantDiff)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the API got no request")
	}
	for _, r := range reqs {
		if r.Auth != "sk-test-real-key" || r.Path != "/v1/responses" {
			t.Errorf("the API got %s with key %q, want /v1/responses with the agent's", r.Path, r.Auth)
		}
	}
	if saved, _ := b.Encode(); strings.Contains(string(saved), "sk-test-real-key") {
		t.Error("the board holds the API key")
	}

	os.WriteFile(file, []byte(buggy), 0o644)
	srv.Close()
	t.Setenv("PATH", "/usr/bin:/bin")
	rep, err := replay.Run(context.Background(), b, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.RunErr != nil || rep.Divergence != nil {
		t.Fatalf("replay: %v, divergence %v", rep.RunErr, rep.Divergence)
	}
	if got, _ := os.ReadFile(file); string(got) != fixed {
		t.Fatalf("calc.go after the offline replay:\n%s", got)
	}
}

// TestClaudeCodeSandbox runs Claude Code under sandbox: strict: the
// session works through the proxy, the one address it can reach, while
// the model API's own port on the host's loopback is out of its reach;
// with network: true (the control) that port answers.
func TestClaudeCodeSandbox(t *testing.T) {
	bin := claudeBinDir(t)
	for _, tc := range []struct {
		name, sandbox, reach string
	}{
		{"strict", "strict", "REACH=no"},
		{"control: network", "{network: true}", "REACH=yes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			file := filepath.Join(wd, "calc.go")
			os.WriteFile(file, []byte(buggy), 0o644)
			srv := agenttest.New(nil)
			defer srv.Close()
			port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
			turns := fixSession(file)
			probe := agenttest.Turn{Text: "Checking the network.", Calls: []agenttest.Call{{Name: "Bash", Input: map[string]any{
				"command":     `(exec 3<>/dev/tcp/127.0.0.1/` + port + `) 2>/dev/null && echo REACH=y""es || echo REACH=n""o`,
				"description": "Try the API's port"}}}, InputTokens: 1250, OutputTokens: 30}
			srv.Turns = append(turns[:2:2], probe, turns[2])
			t.Setenv("TEST_CLAUDE_KEY", "sk-test-real-key")
			t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

			b, err := runCoding(t, wd, claudePlan(srv.URL, "    sandbox: "+tc.sandbox+"\n    args: [--allowedTools, Bash]\n"))
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if got, _ := os.ReadFile(file); string(got) != fixed {
				t.Fatalf("calc.go after the session:\n%s", got)
			}
			res, rec := result(t, b, "fix")
			if rec.Output != "Fixed Add." || res.Calls < 4 {
				t.Errorf("output %q, calls %d", rec.Output, res.Calls)
			}
			if res.Sandbox == nil || !res.Sandbox.Active || res.Sandbox.Network != (tc.reach == "REACH=yes") {
				t.Errorf("sandbox %+v", res.Sandbox)
			}
			var answer string
			for _, r := range srv.Requests() {
				if r.Turn == 4 {
					raw, _ := json.Marshal(r.Body["messages"])
					answer = string(raw)
				}
			}
			if !strings.Contains(answer, `"content":"`+tc.reach+`\n`) {
				i := strings.LastIndex(answer, "tool_result")
				t.Errorf("the probe's answer is not %s: %s", tc.reach, answer[max(i-1500, 0):])
			}
		})
	}
}

// TestClaudeCodeFork: a fork that goes live after a coding_agent step
// gives that step from its recording (no CLI, no API: the change
// restored to the workdir) and its live part sees the fixed file.
func TestClaudeCodeFork(t *testing.T) {
	bin := claudeBinDir(t)
	wd := t.TempDir()
	file := filepath.Join(wd, "calc.go")
	os.WriteFile(file, []byte(buggy), 0o644)
	srv := agenttest.New(fixSession(file))
	defer srv.Close()
	t.Setenv("TEST_CLAUDE_KEY", "sk-test-real-key")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	b, err := runCoding(t, wd, claudePlan(srv.URL, "  - label: after\n    type: command\n    run: grep -c 'a + b' calc.go\n"))
	if err != nil {
		t.Fatalf("run: %v", err)
	}

	os.WriteFile(file, []byte(buggy), 0o644)
	srv.Close()
	t.Setenv("PATH", "/usr/bin:/bin")
	rep, err := replay.Run(context.Background(), b, replay.Options{From: "after", Workdir: wd})
	if err != nil {
		t.Fatal(err)
	}
	if rep.RunErr != nil || !rep.Live {
		t.Fatalf("fork: %v, live %v", rep.RunErr, rep.Live)
	}
	if got, _ := os.ReadFile(file); string(got) != fixed {
		t.Fatalf("calc.go after the fork:\n%s", got)
	}
	var exchanges int
	for _, r := range rep.Board.Recordings() {
		if r.Kind == "coding_agent" && r.Call > 0 {
			exchanges++
		}
	}
	if exchanges != 3 {
		t.Errorf("the fork's board has %d of the session's exchanges, want 3", exchanges)
	}
	for _, s := range rep.Board.Steps() {
		if s.Label == "after" && (s.Status != engine.StatusSucceeded || !strings.Contains(string(s.Result), `"output":"1"`)) {
			t.Errorf("after: %s %s", s.Status, s.Result)
		}
	}
}

// TestClaudeCodeRunLimit: the run's limits.max_cost_usd counts each of
// the session's answers once: a limit just above the session's cost lets
// it finish, a lower one stops it at the answer that crosses it.
func TestClaudeCodeRunLimit(t *testing.T) {
	bin := claudeBinDir(t)
	for _, tc := range []struct {
		limit   string
		stopped bool
		calls   int
	}{
		{"0.013", false, 3}, // the session costs $0.01245
		{"0.005", true, 2},  // $0.00825 after two answers
	} {
		t.Run(tc.limit, func(t *testing.T) {
			wd := t.TempDir()
			file := filepath.Join(wd, "calc.go")
			os.WriteFile(file, []byte(buggy), 0o644)
			srv := agenttest.New(fixSession(file))
			defer srv.Close()
			t.Setenv("TEST_CLAUDE_KEY", "sk-test-real-key")
			t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			src := strings.Replace(claudePlan(srv.URL, ""), "steps:\n", "limits: {max_cost_usd: "+tc.limit+"}\nsteps:\n", 1)
			b, err := runCoding(t, wd, src)
			res, rec := result(t, b, "fix")
			if (err != nil) != tc.stopped || (res.Stopped != "") != tc.stopped || res.Calls != tc.calls {
				t.Fatalf("run: %v; stopped %q after %d calls", err, res.Stopped, res.Calls)
			}
			if tc.stopped && !strings.Contains(rec.Error, "limits.max_cost_usd") {
				t.Errorf("error %q does not name the run's limit", rec.Error)
			}
		})
	}
}

package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/codingagent/agenttest"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/testutil/testtool"
)

const claudeHow = "npm install --prefix DIR @anthropic-ai/claude-code@2.1.332 and set RUNNER_TEST_NODE_MODULES=DIR/node_modules; .ci/install and .ci/run do"

// TestFixTestsClaudeCodeExample runs examples/fix-tests-claude-code with
// the real Claude Code against a scripted model API: the first session
// fixes the loop, the tests still fail on no numbers, the second session
// (whose prompt carries the failure) fixes that and the tests pass. An
// offline replay, with claude off PATH, restores both changes.
func TestFixTestsClaudeCodeExample(t *testing.T) {
	modules := testtool.FromEnv(t, "RUNNER_TEST_NODE_MODULES", "Claude Code", claudeHow)
	bin := filepath.Join(modules, ".bin")
	_, err := os.Stat(filepath.Join(bin, "claude"))
	testtool.Need(t, "claude", err == nil, "not in $RUNNER_TEST_NODE_MODULES/.bin; "+claudeHow)
	testtool.LookPath(t, "node", ".ci/install installs it with apt-get (nodejs)")

	example := filepath.Join(repoRoot(), "examples/fix-tests-claude-code")
	project := filepath.Join(repoRoot(), "examples/fix-tests")
	before := treeHash(t, project)
	wd := t.TempDir()
	ws := regexp.MustCompile(`\.runner/runs/[^/\s]+/project`)
	srv := agenttest.New(nil)
	defer srv.Close()
	srv.Sessions = func(prompt string) []agenttest.Turn {
		file := filepath.Join(wd, ws.FindString(prompt), "stats.go")
		read := agenttest.Call{Name: "Read", Input: map[string]any{"file_path": file}}
		if !strings.Contains(prompt, "did not make them pass") {
			return []agenttest.Turn{
				{Text: "Reading stats.go.", Calls: []agenttest.Call{read}, InputTokens: 1000, OutputTokens: 40},
				{Text: "The loop skips the first number.", Calls: []agenttest.Call{{Name: "Edit", Input: map[string]any{
					"file_path": file, "old_string": "i := 1;", "new_string": "i := 0;"}}}, InputTokens: 1100, OutputTokens: 50},
				{Text: "Mean now adds every number.", InputTokens: 1200, OutputTokens: 20},
			}
		}
		return []agenttest.Turn{
			{Text: "Reading stats.go again.", Calls: []agenttest.Call{read}, InputTokens: 1000, OutputTokens: 40},
			{Text: "No numbers divide by zero.", Calls: []agenttest.Call{{Name: "Edit", Input: map[string]any{
				"file_path": file, "old_string": "\treturn sum / float64(len(xs))",
				"new_string": "\tif len(xs) == 0 {\n\t\treturn 0\n\t}\n\treturn sum / float64(len(xs))"}}}, InputTokens: 1100, OutputTokens: 50},
			{Text: "Mean of no numbers is 0.", InputTokens: 1200, OutputTokens: 20},
		}
	}
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"GOCACHE=" + goCache(t), "ANTHROPIC_API_KEY=sk-test-example-key"}
	r := runEnv(t, wd, env, "run", filepath.Join(example, "plan.yaml"), "-q", "--agent", "claude.base_url="+srv.URL)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	recorded := blackboardPath(t, r.stdout)
	b, err := board.Load(recorded)
	if err != nil {
		t.Fatal(err)
	}
	var visits []string
	var dir string
	for _, s := range b.Steps() {
		if s.Label == "fix" || s.Label == "test" {
			visits = append(visits, s.Label+":"+string(s.Status))
		}
		if s.Label == "prepare" {
			dir = filepath.Join(wd, ws.FindString(string(s.Result)))
		}
	}
	if got := strings.Join(visits, " "); got != "fix:succeeded test:failed fix:succeeded test:succeeded" {
		t.Errorf("visits %s", got)
	}
	if b.Run().Status != "succeeded" {
		t.Errorf("run status %s", b.Run().Status)
	}
	file := filepath.Join(dir, "stats.go")
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(want), "i := 0;") || !strings.Contains(string(want), "if len(xs) == 0 {") {
		t.Fatalf("stats.go after the run:\n%s", want)
	}
	for _, req := range srv.Requests() {
		if req.Auth != "sk-test-example-key" {
			t.Errorf("the API got key %q, want the agent's", req.Auth)
		}
	}

	// What the CLI's model calls cost is the run's spend wherever it is
	// read back: the run list and `runner cost`, as the steps metered it.
	var calls, tokens int
	var spent float64
	for _, s := range b.Steps() {
		var res struct {
			Calls int `json:"calls"`
			Usage struct {
				In      int     `json:"input_tokens"`
				Out     int     `json:"output_tokens"`
				CostUSD float64 `json:"cost_usd"`
			} `json:"usage"`
		}
		if s.Label == "fix" && json.Unmarshal(s.Result, &res) == nil {
			calls, tokens, spent = calls+res.Calls, tokens+res.Usage.In+res.Usage.Out, spent+res.Usage.CostUSD
		}
	}
	if calls < 6 || spent <= 0 {
		t.Fatalf("the fix steps metered %d calls costing $%g", calls, spent)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-5 }
	r = runEnv(t, wd, env, "runs", "--json")
	var listed []struct {
		Usage struct {
			Calls   int     `json:"calls"`
			CostUSD float64 `json:"cost_usd"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil || len(listed) != 1 {
		t.Fatalf("runner runs --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	if u := listed[0].Usage; u.Calls != calls || !near(u.CostUSD, spent) {
		t.Errorf("runner runs: %d calls, $%g; the steps metered %d, $%g", u.Calls, u.CostUSD, calls, spent)
	}
	r = runEnv(t, wd, env, "cost", "--json")
	var cost struct {
		Total struct {
			Calls   int     `json:"calls"`
			Tokens  int     `json:"tokens"`
			CostUSD float64 `json:"cost_usd"`
		} `json:"total"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &cost); err != nil {
		t.Fatalf("runner cost --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	if c := cost.Total; c.Calls != calls || c.Tokens != tokens || !near(c.CostUSD, spent) {
		t.Errorf("runner cost: %+v; the steps metered %d calls, %d tokens, $%g", c, calls, tokens, spent)
	}

	// Offline, with the project back as it was and no claude on PATH.
	orig, _ := os.ReadFile(filepath.Join(project, "project", "stats.go"))
	os.WriteFile(file, orig, 0o644)
	srv.Close()
	offEnv := []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	out := filepath.Join(t.TempDir(), "replay.json")
	r = runEnv(t, t.TempDir(), offEnv, "replay", recorded, "--offline", "--out", out)
	if r.code != 0 {
		t.Fatalf("offline replay: exit %d\n%s", r.code, r.stderr)
	}
	if got, _ := os.ReadFile(file); string(got) != string(want) {
		t.Errorf("stats.go after the offline replay:\n%s\nwant:\n%s", got, want)
	}
	if a, b := normalBoard(t, recorded), normalBoard(t, out); a != b {
		t.Errorf("the offline replay's board differs:\n%s", replay.UnifiedDiff("recorded", "replayed", a, b))
	}
	if after := treeHash(t, project); after != before {
		t.Fatal("running the example changed examples/fix-tests")
	}
}

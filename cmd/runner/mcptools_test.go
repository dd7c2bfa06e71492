package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/planrunner/runner/internal/testutil/testtool"
)

// fsModel is a model API (OpenAI's wire format) whose first answer asks
// the filesystem MCP server for a file and whose second quotes what the
// tool gave back: what the run produces depends on the tool's result.
type fsModel struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls int
	tools []string // tool names offered in the first request
}

func newFSModel(t *testing.T, file string) *fsModel {
	f := &fsModel{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		f.calls++
		if f.calls == 1 {
			for _, t := range req.Tools {
				f.tools = append(f.tools, t.Function.Name)
			}
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		last := req.Messages[len(req.Messages)-1]
		if last.Role != "tool" {
			args, _ := json.Marshal(map[string]string{"path": file})
			fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"fs__read_text_file","arguments":%q}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, args)
			return
		}
		answer, _ := json.Marshal("the file says: " + strings.TrimSpace(last.Content))
		fmt.Fprintf(w, `{"id":"c2","object":"chat.completion","model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, answer)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// TestMCPFilesystemRunReplayReuse runs a plan whose agent reads a file
// through the reference filesystem MCP server (from npm), then: reuses
// the run (the tool runs again, the model is not asked), sees a changed
// file as a changed tool result (the model is asked again), and, with
// the server's program deleted and the model gone, replays offline and
// reuses offline, both matching.
func TestMCPFilesystemRunReplayReuse(t *testing.T) {
	const how = "npm install --prefix DIR @modelcontextprotocol/server-filesystem@2026.8.31 and set RUNNER_TEST_NODE_MODULES=DIR/node_modules; .ci/install and .ci/run do"
	mods := testtool.FromEnv(t, "RUNNER_TEST_NODE_MODULES", "the MCP filesystem server", how)
	node := testtool.LookPath(t, "node", ".ci/install installs it with apt-get (nodejs)")
	entry := filepath.Join(mods, "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		testtool.Missing(t, "@modelcontextprotocol/server-filesystem", how)
	}
	wd := t.TempDir()
	bin := t.TempDir()
	server := filepath.Join(bin, "fs-server")
	pidFile := filepath.Join(bin, "pid")
	os.WriteFile(server, []byte(fmt.Sprintf("#!/bin/sh\necho $$ > %q\nexec %q %q \"$@\"\n", pidFile, node, entry)), 0o755)
	file := filepath.Join(wd, "notes.txt")
	os.WriteFile(file, []byte("version one\n"), 0o644)
	f := newFSModel(t, file)
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
agents:
  reader:
    provider: openai
    model: gpt-test
    base_url: "`+f.srv.URL+`/v1"
    mcp:
      - {name: fs, command: [`+server+`, "`+wd+`"]}
    tools: [fs.read_text_file, fs.list_directory]
steps:
  - {label: read, type: llm, agent: reader, prompt: "What does notes.txt say?"}
  - {label: show, type: command, run: "echo '${{ steps.read.output }}'"}
`), 0o644)
	env := []string{"PATH=" + os.Getenv("PATH"), "OPENAI_API_KEY=sk-test", "HOME=" + t.TempDir()}

	said := func(r result, what string) bool {
		b, _ := os.ReadFile(blackboardPath(t, r.stdout))
		return strings.Contains(string(b), `"output":"the file says: `+what+`"`)
	}
	r := runEnv(t, wd, env, "run", plan)
	if r.code != 0 || !said(r, "version one") {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// The server ended with the run.
	pid, _ := os.ReadFile(pidFile)
	if st, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/stat"); len(pid) == 0 || err == nil && !strings.Contains(string(st), ") Z ") {
		t.Errorf("the MCP server (pid %q) outlived the run", pid)
	}
	if strings.Join(f.tools, ",") != "fs__list_directory,fs__read_text_file" {
		t.Errorf("tools offered = %v", f.tools)
	}
	old := blackboardPath(t, r.stdout)

	r = runEnv(t, wd, env, "run", plan, "--reuse", old)
	if r.code != 0 || f.calls != 2 || !strings.Contains(r.stderr, "reused 2 model calls") {
		t.Fatalf("reuse: exit %d, %d model calls\n%s", r.code, f.calls, r.stderr)
	}
	os.WriteFile(file, []byte("version two\n"), 0o644)
	r = runEnv(t, wd, env, "run", plan, "--reuse", old)
	if r.code != 0 || f.calls != 3 || !said(r, "version two") {
		t.Fatalf("reuse after the file changed: exit %d, %d model calls\n%s\n%s", r.code, f.calls, r.stdout, r.stderr)
	}

	// The servers and the model are gone.
	os.RemoveAll(bin)
	f.srv.Close()
	r = runEnv(t, wd, env, "replay", old, "--offline")
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "matched the recording") {
		t.Fatalf("replay --offline: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runEnv(t, wd, env, "run", plan, "--reuse", old, "--offline")
	if r.code != 0 || !said(r, "version one") {
		t.Fatalf("reuse --offline: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestFixTestsMCPExample runs examples/fix-tests/mcp.yaml, whose coder
// reads the project through the filesystem MCP server and answers in
// SEARCH/REPLACE blocks (here node and
// the npm package .ci/install puts in RUNNER_TEST_NODE_MODULES, instead
// of npx, which would download it), then replays it offline with no
// node on PATH.
func TestFixTestsMCPExample(t *testing.T) {
	const how = "npm install --prefix DIR @modelcontextprotocol/server-filesystem@2026.8.31 and set RUNNER_TEST_NODE_MODULES=DIR/node_modules; .ci/install and .ci/run do"
	mods := testtool.FromEnv(t, "RUNNER_TEST_NODE_MODULES", "the MCP filesystem server", how)
	node := testtool.LookPath(t, "node", ".ci/install installs it with apt-get (nodejs)")
	entry := filepath.Join(mods, "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		testtool.Missing(t, "@modelcontextprotocol/server-filesystem", how)
	}
	testtool.LookPath(t, "go", "the example's tests run go test")
	wd := t.TempDir()
	if err := os.CopyFS(wd, os.DirFS(filepath.Join(repoRoot(), "examples/fix-tests"))); err != nil {
		t.Fatal(err)
	}
	src, _ := os.ReadFile(filepath.Join(wd, "mcp.yaml"))
	const npx = `command: [npx, -y, "@modelcontextprotocol/server-filesystem@2026.8.31", "."]`
	if !strings.Contains(string(src), npx) {
		t.Fatalf("mcp.yaml no longer starts the server with %s", npx)
	}
	os.WriteFile(filepath.Join(wd, "mcp.yaml"), []byte(strings.Replace(string(src), npx, fmt.Sprintf("command: [%q, %q, \".\"]", node, entry), 1)), 0o644)
	r := runCLI(t, wd, "run", "mcp.yaml")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	bb := blackboardPath(t, r.stdout)
	saved, _ := os.ReadFile(bb)
	if !strings.Contains(string(saved), `"kind":"mcp"`) || !strings.Contains(string(saved), `for i := 1; i \u003c len(xs)`) && !strings.Contains(string(saved), `for i := 1; i < len(xs)`) {
		t.Errorf("the run did not record reading stats.go through the server")
	}
	// The coder answered in SEARCH/REPLACE, and runner applied it: the
	// done step's diff against the original shows the fix.
	if !strings.Contains(string(saved), `\u003c\u003c\u003c\u003c\u003c\u003c\u003c SEARCH`) && !strings.Contains(string(saved), "<<<<<<< SEARCH") {
		t.Errorf("the recorded answer holds no SEARCH/REPLACE block")
	}
	_, steps := loadRun(t, bb)
	if out, _ := stepResult(t, steps, "done")["output"].(string); !strings.Contains(out, "+\tif len(xs) == 0 {") || !strings.Contains(out, "+\tfor i := 0; i < len(xs); i++ {") {
		t.Errorf("the SEARCH/REPLACE edit is not in the project:\n%s", out)
	}
	env := []string{"PATH=/nonexistent", "HOME=" + t.TempDir()}
	r = runEnv(t, wd, env, "replay", bb, "--offline")
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "matched the recording") {
		t.Fatalf("replay --offline: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

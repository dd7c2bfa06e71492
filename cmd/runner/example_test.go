package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"gopkg.in/yaml.v3"
)

// treeHash is a digest of every file under dir (names and bytes).
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		fmt.Fprintf(h, "%s %d\n", p, len(b))
		h.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// checkFixTestsRun checks the flagship loop: two visits of fix, the
// first test run failing, the second passing, the failure summary in the
// second prompt.
func checkFixTestsRun(t *testing.T, path string) *board.Board {
	t.Helper()
	b, err := board.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	visits := map[string][]board.StepRecord{}
	for _, s := range b.Steps() {
		visits[s.Label] = append(visits[s.Label], s)
	}
	if n := len(visits["fix"]); n != 2 {
		t.Fatalf("fix ran %d times, want 2", n)
	}
	tests := visits["test"]
	if len(tests) != 2 || tests[0].Status != "failed" || tests[1].Status != "succeeded" {
		t.Fatalf("test visits: %+v", tests)
	}
	// The model's code ran confined, and the result says so.
	for _, v := range tests {
		var res struct {
			Sandbox *struct {
				Mode            string
				Active, Network bool
			}
		}
		json.Unmarshal(v.Result, &res)
		if res.Sandbox == nil || !res.Sandbox.Active || res.Sandbox.Network || res.Sandbox.Mode != "strict" {
			t.Errorf("test visit %d: sandbox %+v, want strict, active, no network", v.Visit, res.Sandbox)
		}
	}
	if !strings.Contains(tests[0].Error, "Mean([2 4 6]) = 3.3333333333333335, want 4") {
		t.Errorf("first test run's error does not name the failure: %s", tests[0].Error)
	}
	var second string
	for _, r := range b.Recordings() {
		if r.Label == "fix" && r.Visit == 2 {
			second = string(r.Request)
		}
	}
	if !strings.Contains(second, "Your last change did not make them pass") || !strings.Contains(second, "want 4") {
		t.Errorf("the second prompt does not carry the failure summary: %s", second)
	}
	if b.Run().Status != "succeeded" {
		t.Errorf("run status %s", b.Run().Status)
	}
	return b
}

// The README's flagship command: offline, re-runnable, the example's own
// files never touched.
func TestFixTestsExample(t *testing.T) {
	example, _ := filepath.Abs("../../examples/fix-tests")
	before := treeHash(t, example)
	wd := t.TempDir()
	for i := 1; i <= 2; i++ {
		r := runCLI(t, wd, "run", filepath.Join(example, "plan.yaml"))
		if r.code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i, r.code, r.stderr)
		}
		checkFixTestsRun(t, blackboardPath(t, r.stdout))
	}
	if after := treeHash(t, example); after != before {
		t.Fatal("running the example changed examples/fix-tests")
	}
}

// The fix-tests loop with a coder answering in SEARCH/REPLACE blocks:
// the first block quotes a line that is not in the file, and the refusal,
// in SEARCH/REPLACE terms, goes back to the model; the second answer is
// applied and the tests pass. (TestExamplesRunAndReplay replays it.)
func TestFixTestsSearchReplaceExample(t *testing.T) {
	example, _ := filepath.Abs("../../examples/fix-tests-search-replace")
	project, _ := filepath.Abs("../../examples/fix-tests")
	before := treeHash(t, project)
	wd := t.TempDir()
	r := runCLI(t, wd, "run", filepath.Join(example, "plan.yaml"))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	b, err := board.Load(blackboardPath(t, r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	var applies []board.StepRecord
	fixes := 0
	for _, s := range b.Steps() {
		switch s.Label {
		case "apply":
			applies = append(applies, s)
		case "fix":
			fixes++
		}
	}
	if fixes != 2 || len(applies) != 2 || applies[0].Status != "failed" || applies[1].Status != "succeeded" {
		t.Fatalf("fix visits %d, apply visits %+v", fixes, applies)
	}
	if !strings.Contains(applies[0].Error, "SEARCH/REPLACE block 1 (line 5 of the answer) for stats.go does not apply") {
		t.Errorf("first apply's error: %s", applies[0].Error)
	}
	var second string
	for _, rec := range b.Recordings() {
		if rec.Label == "fix" && rec.Visit == 2 {
			second = string(rec.Request)
		}
	}
	if !strings.Contains(second, "Your last edits did not apply") || !strings.Contains(second, "Its SEARCH lines are not in stats.go") {
		t.Errorf("the second prompt does not carry the refusal: %s", second)
	}
	if b.Run().Status != "succeeded" {
		t.Errorf("run status %s", b.Run().Status)
	}
	if after := treeHash(t, project); after != before {
		t.Fatal("running the example changed examples/fix-tests")
	}
}

// The same plan against an OpenAI-compatible server, switched with one
// flag: the server (speaking the Chat Completions wire format) answers as
// the script does.
func TestFixTestsExampleOpenAI(t *testing.T) {
	example, _ := filepath.Abs("../../examples/fix-tests")
	var canned map[string][]string
	data, err := os.ReadFile(filepath.Join(example, "answers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &canned); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var prompts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, "bad request "+r.URL.Path, 400)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Model    string `json:"model"`
			Messages []struct{ Role, Content string }
		}
		json.Unmarshal(body, &req)
		mu.Lock()
		n := len(prompts)
		prompts = append(prompts, req.Messages[len(req.Messages)-1].Content)
		mu.Unlock()
		answer := canned["fix"][min(n, 1)]
		resp := map[string]any{"id": "x", "object": "chat.completion", "model": req.Model + "-2024-07-18",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": answer}}},
			"usage": map[string]any{"prompt_tokens": 300 + n, "completion_tokens": 90, "total_tokens": 390 + n}}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	}))
	defer srv.Close()
	wd := t.TempDir()
	cmd := []string{"run", filepath.Join(example, "plan.yaml"), "--agent", "coder.provider=openai", "--agent", "coder.base_url=" + srv.URL + "/v1"}
	t.Setenv("OPENAI_API_KEY", "sk-test")
	r := runCLI(t, wd, cmd...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	b := checkFixTestsRun(t, blackboardPath(t, r.stdout))
	if len(prompts) != 2 || !strings.Contains(prompts[0], "func Mean") {
		t.Fatalf("the server saw %d prompts: %q", len(prompts), prompts)
	}
	if got := b.Run().Agents["coder"]["provider"]; got != "openai" {
		t.Errorf("the saved run does not keep the override: %v", b.Run().Agents)
	}
	for _, s := range b.Steps() {
		if s.Label == "fix" && !strings.Contains(string(s.Result), `"input_tokens":30`) {
			t.Errorf("fix result without the server's usage: %s", s.Result)
		}
	}
	// Without a key the run stops before the first step.
	t.Setenv("OPENAI_API_KEY", "")
	if r := runCLI(t, wd, cmd...); r.code != 2 || !strings.Contains(r.stderr, "OPENAI_API_KEY is not set") {
		t.Errorf("no key: exit %d %s", r.code, r.stderr)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"github.com/planrunner/runner/internal/board"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/planrunner/runner/internal/replay"
	"gopkg.in/yaml.v3"
)

// copyDir copies the files under src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// anthropicSSE is a streamed Messages API answer with text, in the event
// sequence of Anthropic's API reference, "Streaming Messages"
// (https://platform.claude.com/docs/en/build-with-claude/streaming):
// message_start (with the input usage), a text block in three deltas, a
// ping, message_delta (stop_reason and output usage), message_stop.
func anthropicSSE(model, text string, input, cacheWrite, cacheRead, output int) string {
	var b strings.Builder
	event := func(name string, data any) {
		j, _ := json.Marshal(data)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, j)
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_01", "type": "message", "role": "assistant", "content": []any{}, "model": model,
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": input, "cache_creation_input_tokens": cacheWrite, "cache_read_input_tokens": cacheRead, "output_tokens": 1}}})
	event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	event("ping", map[string]any{"type": "ping"})
	third := len(text) / 3
	for _, part := range []string{text[:third], text[third : 2*third], text[2*third:]} {
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": part}})
	}
	event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": output}})
	event("message_stop", map[string]any{"type": "message_stop"})
	return b.String()
}

// The fix-tests loop on Anthropic, streaming, with a system prompt long
// enough to be cached: the first call writes the cache, the second reads
// it; the costs follow Anthropic's pricing (cache writes 1.25 times input,
// reads a tenth), the summary shows them per agent, and the run replays
// offline with no server.
func TestFixTestsExampleAnthropicStreaming(t *testing.T) {
	example, _ := filepath.Abs("../../examples/fix-tests")
	dir := t.TempDir()
	copyDir(t, example, dir)
	var canned map[string][]string
	data, _ := os.ReadFile(filepath.Join(dir, "answers.yaml"))
	if err := yaml.Unmarshal(data, &canned); err != nil {
		t.Fatal(err)
	}
	// A house-rules preamble makes the system prompt about 1,500 tokens.
	src, _ := os.ReadFile(filepath.Join(dir, "plan.yaml"))
	rules := strings.Repeat("      Keep functions short, name things plainly, and never change a test to make it pass.\n", 70)
	plan := strings.Replace(string(src), "    system: |\n", "    system: |\n"+rules, 1)
	if plan == string(src) {
		t.Fatal("the example's system prompt moved; update this test")
	}
	const model = "claude-sonnet-4-5-20250929"
	var mu sync.Mutex
	var problems []string
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
			System []struct {
				Text         string `json:"text"`
				CacheControl *struct {
					Type string `json:"type"`
				} `json:"cache_control"`
			} `json:"system"`
		}
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path != "/v1/messages" || r.Header.Get("x-api-key") != "sk-ant-test" || r.Header.Get("anthropic-version") == "" {
			http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, http.StatusUnauthorized)
			return
		}
		if err := json.Unmarshal(raw, &req); err != nil || !req.Stream || r.Header.Get("Accept") != "text/event-stream" {
			problems = append(problems, fmt.Sprintf("not a streaming request (%v): %s", err, raw))
		}
		if len(req.System) != 1 || req.System[0].CacheControl == nil || req.System[0].CacheControl.Type != "ephemeral" ||
			!strings.Contains(req.System[0].Text, "never change a test") {
			problems = append(problems, "the system prompt is not marked for the cache: "+string(raw[:min(len(raw), 300)]))
		}
		n := calls
		calls++
		answer := canned["fix"][min(n, 1)]
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 0 { // the cache is written
			io.WriteString(w, anthropicSSE(model, answer, 300, 1500, 0, 200))
		} else { // and read
			io.WriteString(w, anthropicSSE(model, answer, 400, 0, 1500, 200))
		}
	}))
	defer srv.Close()
	// The agent on Anthropic, streaming, in the plan itself (a replay
	// reads the recorded plan).
	agent := strings.NewReplacer("    provider: script\n    model: gpt-4o-mini\n",
		"    provider: anthropic\n    model: "+model+"\n    base_url: "+srv.URL+"\n    stream: true\n",
		"    responses: answers.yaml\n", "").Replace(plan)
	if !strings.Contains(agent, "provider: anthropic") || strings.Contains(agent, "responses:") {
		t.Fatal("the example's agent moved; update this test")
	}
	os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(agent), 0o644)

	wd := t.TempDir()
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	r := runCLI(t, wd, "run", filepath.Join(dir, "plan.yaml"), "--log-format", "console")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, p := range problems {
		t.Error(p)
	}
	recorded := blackboardPath(t, r.stdout)
	b := checkFixTestsRun(t, recorded)
	// 300 input at $3, 1,500 written at $3.75, 200 output at $15; then
	// 400 input, 1,500 read at $0.30, 200 output (per million tokens).
	want := (300*3 + 1500*3.75 + 200*15 + 400*3 + 1500*0.30 + 200*15) / 1e6
	var cost float64
	for _, rec := range b.Recordings() {
		if rec.Kind != "llm" {
			continue
		}
		var resp struct {
			CostUSD float64 `json:"cost_usd"`
		}
		json.Unmarshal(rec.Response, &resp)
		cost += resp.CostUSD
	}
	if math.Abs(cost-want) > 1e-9 {
		t.Errorf("recorded cost $%v, want $%v", cost, want)
	}
	// The step's usage on the board counts the cache's reads and writes
	// apart from the rest of the input.
	checkStepUsage(t, b, "fix", []string{
		`{"input_tokens":1800,"output_tokens":200,"cache_creation_input_tokens":1500,`,
		`{"input_tokens":1900,"output_tokens":200,"cache_read_input_tokens":1500,`,
	})
	if line := "3700 in (1500 cached, 1500 written to the cache), 400 out (2 calls, $0.014)"; !strings.Contains(r.stderr, line) {
		t.Errorf("the summary lacks %q:\n%s", line, r.stderr)
	}
	// Saved: 1,500 read at $2.70 under input, less 1,500 written at $0.75 over.
	if line := "  agent coder: 2 calls, 3700 input (cache: 1500 read, 1500 written, saved $0.0029) + 400 output tokens, $0.014"; !strings.Contains(r.stderr, line) {
		t.Errorf("the summary lacks %q:\n%s", line, r.stderr)
	}
	// The report shows the same per agent.
	html := filepath.Join(wd, "report.html")
	if r := runCLI(t, wd, "report", recorded, "-o", html); r.code != 0 {
		t.Fatalf("report: exit %d %s", r.code, r.stderr)
	}
	page, _ := os.ReadFile(html)
	if row := `<tr data-agent="coder"><td>coder</td><td class="n">2</td><td class="n">1500</td><td class="n">1500</td><td class="n">$0.0029</td></tr>`; !strings.Contains(string(page), row) {
		t.Errorf("the report lacks the agent's cache row %s", row)
	}

	srv.Close() // the network is gone
	out := filepath.Join(wd, "replay.json")
	t.Setenv("ANTHROPIC_API_KEY", "")
	r = runCLI(t, t.TempDir(), "replay", recorded, "--offline", "--out", out)
	if r.code != 0 {
		t.Fatalf("replay: exit %d %s", r.code, r.stderr)
	}
	if a, b := normalBoard(t, recorded), normalBoard(t, out); a != b {
		t.Errorf("replayed board differs from the recording:\n%s", replay.UnifiedDiff("recorded", "replayed", a, b))
	}
	if calls != 2 {
		t.Errorf("%d model calls, want 2 (the replay called the model?)", calls)
	}
}

// checkStepUsage checks the usage each visit of an llm step reports on
// the board: want[i] is how visit i+1's begins.
func checkStepUsage(t *testing.T, b *board.Board, label string, want []string) {
	t.Helper()
	var got []string
	for _, st := range b.Steps() {
		if st.Label != label {
			continue
		}
		var res struct {
			Usage json.RawMessage `json:"usage"`
		}
		json.Unmarshal(st.Result, &res)
		got = append(got, string(res.Usage))
	}
	if len(got) != len(want) {
		t.Fatalf("step %s: %d visits, want %d: %v", label, len(got), len(want), got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("step %s visit %d: usage %s, want it to begin %s", label, i+1, got[i], want[i])
		}
	}
}

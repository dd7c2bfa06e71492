package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A real `runner mcp` process, driven over its stdin and stdout by the
// SDK's client as an MCP host starts it: validate, start a run, follow it
// to its end, read its board.
func TestMCPStdioWithTheSDKClient(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hello.yaml"), []byte("version: 1\nname: hello\nsteps:\n  - {label: say, type: command, run: echo hello}\n"), 0o644)
	cmd := exec.Command(binary, "mcp", "--dir", dir)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ctx := context.Background()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ServerInfo.Name; got != "runner" {
		t.Errorf("server name %q", got)
	}
	callText := func(name string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v (stderr: %s)", name, err, stderr.String())
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), res.IsError
	}
	if text, isErr := callText("validate_plan", map[string]any{"source": "version: 1\nname: x\nsteps:\n  - {label: a, type: nosuch}\n"}); isErr || !strings.Contains(text, `"line":4`) {
		t.Errorf("validate_plan: %s", text)
	}
	text, isErr := callText("start_run", map[string]any{"plan": "hello.yaml"})
	if isErr {
		t.Fatalf("start_run: %s", text)
	}
	var started struct {
		Started struct {
			RunID string `json:"run_id"`
		} `json:"started"`
	}
	if err := json.Unmarshal([]byte(text), &started); err != nil || started.Started.RunID == "" {
		t.Fatalf("start_run said %s (%v)", text, err)
	}
	id := started.Started.RunID
	for range 600 {
		text, _ = callText("run_status", map[string]any{"run": id})
		if strings.Contains(text, `"status":"succeeded"`) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(text, `"status":"succeeded"`) || !strings.Contains(text, "hello") {
		t.Fatalf("run_status: %s", text)
	}
	// The run is a runner run like any other: the CLI sees it.
	if r := runCLI(t, dir, "runs"); !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "succeeded") {
		t.Errorf("runner runs: %s", r.stdout)
	}
	if text, isErr := callText("board_write", map[string]any{"run": "latest", "key": "note", "value": "from mcp", "expect_version": 0}); isErr {
		t.Fatalf("board_write: %s", text)
	}
	if r := runCLI(t, dir, "board", "latest", "get", "note"); strings.TrimSpace(r.stdout) != "from mcp" {
		t.Errorf("runner board get: %q %q", r.stdout, r.stderr)
	}
	if strings.Contains(stderr.String(), "panic") {
		t.Errorf("stderr: %s", stderr.String())
	}
}

// The same round trip by hand, as a client that is not Go writes it:
// newline-delimited JSON-RPC on stdin, answers on stdout, logs only on
// stderr; the server ends when stdin closes.
func TestMCPStdioByHand(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(binary, "mcp", "--dir", dir)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 0, 1<<16), 1<<22)
	send := func(msg string) {
		if _, err := io.WriteString(in, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	recv := func() map[string]any {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("no answer (stderr: %s)", stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("stdout holds a line that is not JSON-RPC: %q", lines.Text())
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"byhand","version":"1"}}}`)
	init := recv()
	if res, _ := init["result"].(map[string]any); res == nil || res["protocolVersion"] != "2025-06-18" {
		t.Fatalf("initialize: %v", init)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	list := recv()
	data, _ := json.Marshal(list)
	for _, name := range []string{"validate_plan", "start_run", "run_status", "list_runs", "answer_input", "board_read", "board_list", "board_write", "run_report"} {
		if !strings.Contains(string(data), `"name":"`+name+`"`) {
			t.Errorf("tools/list lacks %s", name)
		}
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_status","arguments":{"run":"nosuch"}}}`)
	res := recv()
	data, _ = json.Marshal(res)
	if !strings.Contains(string(data), `"isError":true`) || !strings.Contains(string(data), "nosuch") {
		t.Errorf("run_status of a run that is not there: %s", data)
	}
	in.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("runner mcp ended with %v once stdin closed (stderr: %s)", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("runner mcp went on after stdin closed")
	}
}

// `runner mcp --http` prints its URL and a token once, and serves only
// requests that carry the token.
func TestMCPHTTPPrintsItsToken(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(binary, "mcp", "--dir", dir, "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	sc := bufio.NewScanner(out)
	var url, token string
	for (url == "" || token == "") && sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "url:"); ok {
			url = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(sc.Text(), "token:"); ok {
			token = strings.TrimSpace(v)
		}
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") || len(token) < 32 {
		t.Fatalf("url %q token %q (stderr: %s)", url, token, stderr.String())
	}
	if strings.Contains(stderr.String(), token) {
		t.Error("the token was logged")
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: status %d", resp.StatusCode)
	}
	hc := &http.Client{Transport: bearerRT{token}}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_runs", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("list_runs over HTTP: %v %+v", err, res)
	}
}

type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func TestMCPUsageErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "extra"}, "takes no arguments"},
		{[]string{"mcp", "--listen-any"}, "--listen-any goes with --http"},
		{[]string{"mcp", "--http", "0.0.0.0:0"}, "listens on every interface"},
		{[]string{"mcp", "--http", "192.0.2.1:8765"}, "not a loopback address"},
		{[]string{"mcp", "--http", "nohostport"}, "want HOST:PORT"},
		{[]string{"mcp", "--dir", filepath.Join(dir, "nosuch")}, "not a directory"},
		{[]string{"mcp", "--log-level", "loud"}, "--log-level"},
	}
	for _, c := range cases {
		r := runCLI(t, dir, c.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("runner %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
}

// `runner mcp` is served by runner itself: a runner alone in a
// directory, nothing else on PATH, answers initialize.
func TestMCPServedByRunnerAlone(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "runner")
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(bin, data, 0o755)
	cmd := exec.Command(bin, "mcp")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + dir, "HOME=" + dir}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"alone","version":"1"}}}`+"\n")
	line, _ := bufio.NewReader(out).ReadString('\n')
	in.Close()
	err = cmd.Wait()
	if err != nil || !strings.Contains(line, `"serverInfo":{"name":"runner"`) {
		t.Errorf("runner mcp alone: %v\nstdout: %s\nstderr: %s", err, line, stderr.String())
	}
}

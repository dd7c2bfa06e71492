package mcpserve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planrunner/runner/internal/server/mcpserve"
)

// runnerBin is the real runner binary: start_run starts runs with it, as
// `runner mcp` does with itself.
var runnerBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpserve-bin")
	if err != nil {
		panic(err)
	}
	runnerBin = filepath.Join(dir, "runner")
	if out, err := exec.Command("go", "build", "-o", runnerBin, "../../../cmd/runner").CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const echoPlan = `version: 1
name: echo
vars:
  word: hi
steps:
  - {label: say, type: command, run: "echo ${{ vars.word }}"}
`

const askPlan = `version: 1
name: ask
steps:
  - label: review
    type: input
    prompt: Ship it?
    form:
      type: object
      properties:
        approve: {type: boolean}
      required: [approve]
  - {label: after, type: command, run: echo shipped}
`

// badPlan has two problems: an unknown step type (line 4) and a missing
// run (line 5).
const badPlan = `version: 1
name: bad
steps:
  - {label: a, type: nosuch}
  - {label: b, type: command}
`

// connect serves a fresh server on dir to the SDK's own client, over the
// SDK's in-memory transport.
func connect(t *testing.T, dir string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectAt(t, dir, opts, "")
}

// connectAt is connect with the client asking for protocol version
// (""): the newest.
func connectAt(t *testing.T, dir string, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	srv := mcpserve.New(mcpserve.Options{Dir: dir, Runner: runnerBin, Version: "test"})
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, st) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// call calls a tool and decodes its structured result into out; it fails
// the test on a protocol error, and returns the tool's error text (empty
// when the tool succeeded).
func call(t *testing.T, cs *mcp.ClientSession, name string, args any, out any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		var msgs []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				msgs = append(msgs, tc.Text)
			}
		}
		if out != nil && res.StructuredContent != nil {
			data, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(data, out)
		}
		return strings.Join(msgs, "\n")
	}
	if out != nil {
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s: decoding %s: %v", name, data, err)
		}
	}
	return ""
}

// waitStatus polls run_status until the run's status is want (or it
// ends otherwise): the run is another process.
func waitStatus(t *testing.T, cs *mcp.ClientSession, run, want string) mcpserve.RunStatus {
	t.Helper()
	var st mcpserve.RunStatus
	for range 600 {
		if msg := call(t, cs, "run_status", map[string]any{"run": run}, &st); msg != "" {
			t.Fatalf("run_status: %s", msg)
		}
		if st.Status == want {
			return st
		}
		if !st.Live && st.Status != "running" && st.Status != "" {
			logs, _ := filepath.Glob(filepath.Join(filepath.Dir(st.Blackboard), "*.log"))
			for _, l := range logs {
				data, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", l, data)
			}
			t.Fatalf("run %s is %s, want %s: %+v", run, st.Status, want, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("run %s is still %s, want %s", run, st.Status, want)
	return st
}

func TestToolsSayWhatTheyTouch(t *testing.T) {
	cs := connect(t, t.TempDir(), nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool
	}
	cases := []struct {
		name               string
		readOnly, actsOnIt bool
	}{
		{"validate_plan", true, false},
		{"run_status", true, false},
		{"list_runs", true, false},
		{"board_read", true, false},
		{"board_list", true, false},
		{"run_report", true, false},
		{"start_run", false, true},
		{"answer_input", false, true},
		{"board_write", false, false},
	}
	for _, c := range cases {
		tool := got[c.name]
		if tool == nil {
			t.Errorf("no tool %s", c.name)
			continue
		}
		a := tool.Annotations
		if a == nil || a.ReadOnlyHint != c.readOnly {
			t.Errorf("%s: read-only hint %v, want %v", c.name, a, c.readOnly)
			continue
		}
		openWorld := a.OpenWorldHint != nil && *a.OpenWorldHint
		if openWorld != c.actsOnIt {
			t.Errorf("%s: open-world hint %v, want %v (it acts on the world: %v)", c.name, openWorld, c.actsOnIt, c.actsOnIt)
		}
		if !c.readOnly && (a.DestructiveHint == nil || !*a.DestructiveHint) {
			t.Errorf("%s changes things but does not say so (destructiveHint)", c.name)
		}
	}
	if d := got["start_run"].Description; !strings.Contains(d, "run commands") || !strings.Contains(d, "money") {
		t.Errorf("start_run's description does not say it acts on the world: %q", d)
	}
}

func TestValidatePlan(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "good.yaml", echoPlan)
	writeFile(t, dir, "bad.yaml", badPlan)
	cs := connect(t, dir, nil)
	cases := []struct {
		name      string
		args      map[string]any
		ok        bool
		problems  []string // each a file:line:col prefix a problem has
		errorText string   // the tool fails saying this
	}{
		{name: "good file", args: map[string]any{"plan": "good.yaml"}, ok: true},
		{name: "good source", args: map[string]any{"source": echoPlan}, ok: true},
		{name: "bad file", args: map[string]any{"plan": "bad.yaml"}, problems: []string{"bad.yaml:4:", "bad.yaml:5:"}},
		{name: "bad source named", args: map[string]any{"source": badPlan, "plan": "mine.yaml"}, problems: []string{"mine.yaml:4:", "mine.yaml:5:"}},
		{name: "not yaml", args: map[string]any{"source": "steps: [\n"}, problems: []string{"plan.yaml:"}},
		{name: "missing file", args: map[string]any{"plan": "nosuch.yaml"}, errorText: "nosuch.yaml"},
		{name: "nothing given", args: map[string]any{}, errorText: "give plan"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out mcpserve.ValidateOutput
			msg := call(t, cs, "validate_plan", c.args, &out)
			if c.errorText != "" {
				if !strings.Contains(msg, c.errorText) {
					t.Fatalf("error %q, want it to say %q", msg, c.errorText)
				}
				return
			}
			if msg != "" {
				t.Fatalf("failed: %s", msg)
			}
			if out.OK != c.ok {
				t.Fatalf("ok %v, want %v: %+v", out.OK, c.ok, out)
			}
			if len(out.Problems) != len(c.problems) {
				t.Fatalf("%d problems, want %d: %+v", len(out.Problems), len(c.problems), out.Problems)
			}
			for i, want := range c.problems {
				p := out.Problems[i]
				if !strings.Contains(p.Text, want) || p.Line == 0 || p.Col == 0 || p.Message == "" {
					t.Errorf("problem %d: %+v, want it at %s with line, col and message", i, p, want)
				}
			}
		})
	}
}

func TestStartRunFollowAndReport(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "echo.yaml", echoPlan)
	cs := connect(t, dir, nil)

	var out mcpserve.StartOutput
	if msg := call(t, cs, "start_run", map[string]any{"plan": "echo.yaml", "vars": map[string]string{"word": "from-mcp"}}, &out); msg != "" {
		t.Fatal(msg)
	}
	if out.Started == nil || out.Started.RunID == "" {
		t.Fatalf("no run id: %+v", out)
	}
	id := out.Started.RunID
	if want := filepath.Join(dir, ".runner", "runs", id, "blackboard.json"); out.Started.Blackboard != want {
		t.Errorf("blackboard %s, want %s", out.Started.Blackboard, want)
	}
	st := waitStatus(t, cs, id, "succeeded")
	if len(st.Steps) != 1 || st.Steps[0].Label != "say" || st.Steps[0].Status != "succeeded" {
		t.Fatalf("steps %+v", st.Steps)
	}
	if res, _ := json.Marshal(st.Steps[0].Result); !strings.Contains(string(res), "from-mcp") {
		t.Errorf("the step's result %s does not hold the var given", res)
	}
	if filepath.Dir(out.Started.Log) != filepath.Dir(out.Started.Blackboard) {
		t.Errorf("the run's log %s is not beside its board", out.Started.Log)
	} else {
		// The board says succeeded a moment before the process logs its end.
		var data []byte
		var err error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if data, err = os.ReadFile(out.Started.Log); err == nil && strings.Contains(string(data), "run finished") {
				break
			}
		}
		if err != nil || !strings.Contains(string(data), "run finished") {
			t.Errorf("the run's log: %v %s", err, data)
		}
	}

	// list_runs and a prefix of the id, and "latest", name the same run.
	var list mcpserve.ListOutput
	call(t, cs, "list_runs", map[string]any{"status": "succeeded"}, &list)
	if len(list.Runs) != 1 || list.Runs[0].ID != id || list.Runs[0].Plan != "echo.yaml" {
		t.Fatalf("list_runs: %+v", list)
	}
	call(t, cs, "list_runs", map[string]any{"status": "failed"}, &list)
	if len(list.Runs) != 0 {
		t.Errorf("list_runs --status failed: %+v", list)
	}
	for _, name := range []string{id[:8], "latest", filepath.Join(".runner", "runs", id)} {
		var s mcpserve.RunStatus
		if msg := call(t, cs, "run_status", map[string]any{"run": name}, &s); msg != "" || s.ID != id {
			t.Errorf("run_status %q: %s %+v", name, msg, s.ID)
		}
	}

	var rep mcpserve.ReportOutput
	call(t, cs, "run_report", map[string]any{"run": id}, &rep)
	if !strings.Contains(rep.Text, "Run "+id+": succeeded") || !strings.Contains(rep.Text, "say") {
		t.Errorf("report:\n%s", rep.Text)
	}
}

func TestStartRunRefusesABadPlan(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "bad.yaml", badPlan)
	writeFile(t, dir, "needs.yaml", "version: 1\nname: n\nvars:\n  who: x\nsteps:\n  - label: a\n    type: command\n    run: echo ${{ vars.who }}\n")
	writeFile(t, dir, "key.yaml", "version: 1\nname: k\nagents:\n  a: {provider: openai, model: gpt-4o-mini, api_key_env: RUNNER_MCP_TEST_NO_KEY}\nsteps:\n  - {label: q, type: llm, agent: a, prompt: hi}\n")
	cs := connect(t, dir, nil)
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"problems with line:col", map[string]any{"plan": "bad.yaml"}, "bad.yaml:4:"},
		{"missing file", map[string]any{"plan": "nosuch.yaml"}, "nosuch.yaml"},
		{"no plan", map[string]any{}, "plan"},
		{"unknown var", map[string]any{"plan": "needs.yaml", "vars": map[string]string{"nope": "1"}}, "nope"},
		{"bad var name", map[string]any{"plan": "needs.yaml", "vars": map[string]string{"a=b": "1"}}, "a=b"},
		{"missing API key", map[string]any{"plan": "key.yaml"}, "RUNNER_MCP_TEST_NO_KEY"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out mcpserve.StartOutput
			msg := call(t, cs, "start_run", c.args, &out)
			if !strings.Contains(msg, c.want) {
				t.Fatalf("error %q, want it to say %q", msg, c.want)
			}
			if out.Started != nil {
				t.Errorf("a run started: %+v", out.Started)
			}
		})
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, ".runner", "runs")); len(ents) != 0 {
		t.Errorf("runs were saved: %v", ents)
	}
}

func TestAnswerAWaitingInputAndResume(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "ask.yaml", askPlan)
	cs := connect(t, dir, nil)
	var out mcpserve.StartOutput
	if msg := call(t, cs, "start_run", map[string]any{"plan": "ask.yaml"}, &out); msg != "" {
		t.Fatal(msg)
	}
	id := out.Started.RunID
	st := waitStatus(t, cs, id, "waiting")
	if len(st.Waiting) != 1 || st.Waiting[0].Label != "review" || st.Waiting[0].Prompt != "Ship it?" || !strings.Contains(st.Waiting[0].Command, "runner answer") {
		t.Fatalf("waiting: %+v", st.Waiting)
	}

	// Answers the form refuses are errors that say why; nothing is recorded.
	bad := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"run": id, "step": "review", "answer": map[string]any{"approve": "yes"}}, "approve"},
		{map[string]any{"run": id, "step": "review", "answer": map[string]any{}}, "approve"},
		{map[string]any{"run": id, "step": "nosuch", "answer": map[string]any{"approve": true}}, "nosuch"},
		{map[string]any{"run": id, "step": "", "answer": map[string]any{"approve": true}}, "step"},
		{map[string]any{"run": id, "step": "review", "visit": -1, "answer": map[string]any{"approve": true}}, "visit"},
		{map[string]any{"run": "nosuch", "step": "review", "answer": map[string]any{"approve": true}}, "nosuch"},
	}
	for _, c := range bad {
		if msg := call(t, cs, "answer_input", c.args, nil); !strings.Contains(msg, c.want) {
			t.Errorf("answer_input %v: error %q, want it to say %q", c.args, msg, c.want)
		}
	}

	var ans mcpserve.AnswerOutput
	if msg := call(t, cs, "answer_input", map[string]any{"run": id, "step": "review", "answer": map[string]any{"approve": true}, "resume": true}, &ans); msg != "" {
		t.Fatal(msg)
	}
	if ans.Where != "file" || ans.Resumed == nil || ans.Resumed.RunID != id {
		t.Fatalf("answer: %+v", ans)
	}
	st = waitStatus(t, cs, id, "succeeded")
	if n := len(st.Steps); n != 2 || st.Steps[1].Label != "after" {
		t.Fatalf("steps after the answer: %+v", st.Steps)
	}
	// The same answer again is fine; another is refused.
	if msg := call(t, cs, "answer_input", map[string]any{"run": id, "step": "review", "answer": map[string]any{"approve": true}}, &ans); msg != "" || !ans.Already {
		t.Errorf("the same answer again: %q %+v", msg, ans)
	}
	if msg := call(t, cs, "answer_input", map[string]any{"run": id, "step": "review", "answer": map[string]any{"approve": false}}, nil); msg == "" {
		t.Error("a different answer was taken")
	}
}

// finishedRun is a run of echoPlan that has ended, in dir.
func finishedRun(t *testing.T, cs *mcp.ClientSession, dir string) string {
	t.Helper()
	writeFile(t, dir, "echo.yaml", echoPlan)
	var out mcpserve.StartOutput
	if msg := call(t, cs, "start_run", map[string]any{"plan": "echo.yaml"}, &out); msg != "" {
		t.Fatal(msg)
	}
	waitStatus(t, cs, out.Started.RunID, "succeeded")
	return out.Started.RunID
}

func TestBoardReadWriteCompareAndSet(t *testing.T) {
	dir := t.TempDir()
	cs := connect(t, dir, nil)
	id := finishedRun(t, cs, dir)

	var w mcpserve.BoardWriteOutput
	if msg := call(t, cs, "board_write", map[string]any{"run": id, "key": "task:1", "value": map[string]any{"state": "open"}, "expect_version": 0}, &w); msg != "" {
		t.Fatal(msg)
	}
	if w.Version != 1 {
		t.Fatalf("first write: version %d", w.Version)
	}
	// A compare-and-set on a stale version is refused and says so; the
	// value stays.
	if msg := call(t, cs, "board_write", map[string]any{"run": id, "key": "task:1", "value": "stolen", "expect_version": 0}, nil); !strings.Contains(msg, "version") {
		t.Fatalf("stale compare-and-set: %q", msg)
	}
	if msg := call(t, cs, "board_write", map[string]any{"run": id, "key": "task:1", "value": map[string]any{"state": "done"}, "expect_version": 1}, &w); msg != "" || w.Version != 2 {
		t.Fatalf("compare-and-set on the current version: %q %+v", msg, w)
	}
	var r mcpserve.BoardReadOutput
	call(t, cs, "board_read", map[string]any{"run": id, "key": "task:1"}, &r)
	if !r.Found || r.Entry.Version != 2 || r.Entry.Value.(map[string]any)["state"] != "done" || r.Entry.Topic != "task" {
		t.Fatalf("read back: %+v", r.Entry)
	}
	var l mcpserve.BoardListOutput
	call(t, cs, "board_list", map[string]any{"run": id, "prefix": "task:"}, &l)
	if len(l.Entries) != 1 || l.Entries[0].Key != "task:1" {
		t.Fatalf("list: %+v", l)
	}
	call(t, cs, "board_read", map[string]any{"run": id, "key": "absent"}, &r)
	if r.Found {
		t.Errorf("an absent key was found: %+v", r)
	}
	if msg := call(t, cs, "board_write", map[string]any{"run": id, "key": "task:1", "delete": true, "expect_version": 2}, &w); msg != "" || !w.Deleted {
		t.Fatalf("delete: %q %+v", msg, w)
	}
	call(t, cs, "board_read", map[string]any{"run": id, "key": "task:1"}, &r)
	if r.Found {
		t.Errorf("a deleted key was found: %+v", r)
	}
	// The writes on the ended run were recorded for replay, as `runner
	// board put` records them.
	var rep mcpserve.ReportOutput
	call(t, cs, "run_report", map[string]any{"run": id}, &rep)

	bad := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"board_write", map[string]any{"run": id, "key": "k"}, "value"},
		{"board_write", map[string]any{"run": id, "key": "k", "value": 1, "delete": true}, "not both"},
		{"board_write", map[string]any{"run": id, "key": "", "value": 1}, "key"},
		{"board_write", map[string]any{"run": id, "key": "k\x00", "value": 1}, "key"},
		{"board_write", map[string]any{"run": id, "key": "k", "value": 1, "expect_version": -1}, "expect_version"},
		{"board_write", map[string]any{"run": id, "key": "k", "value": 1, "ttl_s": -5}, "ttl"},
		{"board_write", map[string]any{"run": id, "key": "k", "value": 1, "agent": "runner"}, "runner"},
		{"board_write", map[string]any{"run": "", "key": "k", "value": 1}, "run"},
		{"board_write", map[string]any{"run": "ZZZZ", "key": "k", "value": 1}, "ZZZZ"},
		{"board_read", map[string]any{"run": id, "key": ""}, "key"},
		{"board_read", map[string]any{"run": "nosuch/blackboard.json", "key": "k"}, "nosuch"},
		{"board_list", map[string]any{"run": "nosuch"}, "nosuch"},
		{"run_status", map[string]any{"run": "nosuch"}, "nosuch"},
		{"run_report", map[string]any{"run": "nosuch"}, "nosuch"},
		{"list_runs", map[string]any{"status": "bogus"}, "bogus"},
	}
	for _, c := range bad {
		if msg := call(t, cs, c.tool, c.args, nil); !strings.Contains(msg, c.want) {
			t.Errorf("%s %v: error %q, want it to say %q", c.tool, c.args, msg, c.want)
		}
	}
}

func TestSubscribedBoardTellsOfChanges(t *testing.T) {
	dir := t.TempDir()
	updated := make(chan string, 16)
	cs := connect(t, dir, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
		updated <- r.Params.URI
	}})
	id := finishedRun(t, cs, dir)
	ctx := context.Background()

	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "runner://runs/" + id})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Contents[0].Text, `"status": "succeeded"`) {
		t.Errorf("run resource: %s", res.Contents[0].Text)
	}
	res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "runner://runs/runs"})
	if err == nil {
		t.Errorf("a run that is not there was read: %+v", res)
	}
	uri := "runner://runs/" + id + "/board"
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	// Under the current protocol the SDK's Subscribe returns once the
	// request is sent; the server takes it up meanwhile (it acknowledges
	// with a notification the SDK does not hand on). So a write made at
	// once can come before the subscription: write again until one is
	// told of, as a client would after its acknowledgement.
	told := false
	for i := 0; i < 30 && !told; i++ {
		if msg := call(t, cs, "board_write", map[string]any{"run": id, "key": "note", "value": "hello"}, nil); msg != "" {
			t.Fatal(msg)
		}
		select {
		case got := <-updated:
			told = true
			if got != uri {
				t.Errorf("told of %s, want %s", got, uri)
			}
		case <-time.After(time.Second):
		}
	}
	if !told {
		t.Fatal("no notification of the board's changes")
	}
	res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil || !strings.Contains(res.Contents[0].Text, "hello") {
		t.Fatalf("board resource after the write: %v %+v", err, res)
	}
}

func TestHTTPNeedsTheToken(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	writeFile(t, dir, "echo.yaml", echoPlan)
	srv := mcpserve.New(mcpserve.Options{Dir: dir, Runner: runnerBin})
	defer srv.Close()
	token, err := mcpserve.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Handler("short"); err == nil {
		t.Error("a short token was taken")
	}
	h, err := srv.Handler(token)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()

	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, auth := range []string{"", "Bearer ", "Bearer " + token[:len(token)-1], "Bearer " + token + "x", token, "bearer " + token} {
		req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("Authorization %q: status %d, want 401", auth, resp.StatusCode)
		}
	}

	// The SDK's streamable client with the token works end to end.
	hc := &http.Client{Transport: bearer{token, http.DefaultTransport}}
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var out mcpserve.ValidateOutput
	if msg := call(t, cs, "validate_plan", map[string]any{"plan": "echo.yaml"}, &out); msg != "" || !out.OK {
		t.Fatalf("validate over HTTP: %q %+v", msg, out)
	}
	// Without it, the SDK's client cannot even connect.
	if cs2, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, nil); err == nil {
		cs2.Close()
		t.Error("a client without the token connected")
	}
}

type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

func TestCheckAddr(t *testing.T) {
	cases := []struct {
		addr    string
		anyHost bool
		ok      bool
	}{
		{"127.0.0.1:8765", false, true},
		{"[::1]:8765", false, true},
		{"localhost:8765", false, true},
		{"127.0.0.2:1", false, true},
		{"0.0.0.0:8765", false, false},
		{":8765", false, false},
		{"192.168.1.5:8765", false, false},
		{"example.com:80", false, false},
		{"0.0.0.0:8765", true, true},
		{"8765", false, false},
		{"127.0.0.1:http", false, false},
		{"127.0.0.1:70000", false, false},
		{"[::]:8765", false, false},
		{"", false, false},
	}
	for _, c := range cases {
		err := mcpserve.CheckAddr(c.addr, c.anyHost)
		if (err == nil) != c.ok {
			t.Errorf("CheckAddr(%q, %v) = %v, want ok %v", c.addr, c.anyHost, err, c.ok)
		}
	}
}

// The MCP server knows no person: an input that names answerers refuses
// its answer, saying so, and keeps waiting.
func TestAnswerersRefuseTheMCPServer(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "ask.yaml", `version: 1
steps:
  - {label: review, type: input, prompt: "Ship it?", answerers: [ann], form: {properties: {approve: {type: boolean}}, required: [approve]}}
`)
	cs := connect(t, dir, nil)
	var out mcpserve.StartOutput
	if msg := call(t, cs, "start_run", map[string]any{"plan": "ask.yaml"}, &out); msg != "" {
		t.Fatal(msg)
	}
	id := out.Started.RunID
	waitStatus(t, cs, id, "waiting")
	msg := call(t, cs, "answer_input", map[string]any{"run": id, "step": "review", "by": "ann", "answer": map[string]any{"approve": true}}, nil)
	if !strings.Contains(msg, "is not among the input's answerers (ann): who answers is not known for sure here") {
		t.Errorf("answer_input: error %q, want the answerers' refusal", msg)
	}
	if st := waitStatus(t, cs, id, "waiting"); len(st.Waiting) != 1 {
		t.Errorf("after the refusal: %+v", st.Waiting)
	}
}

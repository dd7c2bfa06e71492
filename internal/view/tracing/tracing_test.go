package tracing

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/mask"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

const secret = "sk-live-0123456789abcdef"

const plan = `version: 1
name: fix-it
agents:
  coder: {provider: openai, model: gpt-4o}
steps:
  - {label: ask, type: llm, agent: coder, prompt: hi}
`

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func rec(t *testing.T, b *board.Board, s board.StepRecord, result any) {
	t.Helper()
	s.DurationMS = s.FinishedAt.Sub(s.StartedAt).Milliseconds()
	if result != nil {
		raw, err := json.Marshal(result)
		if err != nil {
			t.Fatal(err)
		}
		s.Result = raw
	}
	if err := b.AddStep(s); err != nil {
		t.Fatal(err)
	}
}

// sample is a run of every kind of span: an llm step with two model
// calls (the first asks for a tool), a command that failed with a
// secret in its error, a test step, an apply_diff, and a for_each group
// with two items.
func sample(t *testing.T) *board.Board {
	t.Helper()
	fin := at(1000)
	b := board.New(board.Run{ID: "01RUN", PlanPath: "plan.yaml", PlanSource: plan, Status: board.StatusFailed,
		Error: "step build: exit 2 " + secret, StartedAt: at(0), FinishedAt: &fin, RunnerVersion: "v1.2.3"})
	now := at(0)
	b.SetClock(func() time.Time { return now })

	temp := 0.5
	req := agents.Request{Model: "gpt-4o", System: "be brief", Temperature: &temp,
		Messages: []agents.Message{{Role: agents.RoleUser, Content: "the key is " + secret}}}
	resp := agents.Response{Text: "", ToolCalls: []agents.ToolCall{{ID: "c1", Name: "board_read", Args: json.RawMessage(`{"key":"x"}`)}},
		Usage: agents.Usage{InputTokens: 11, OutputTokens: 7, CacheReadInputTokens: 3}, FinishReason: "tool_calls", Model: "gpt-4o-2024", CostUSD: 0.0021}
	now = at(150)
	if _, err := b.Append(board.Entry{Section: agents.Section, Role: agents.RoleAssistant, Author: "coder", Label: "ask",
		Meta: map[string]any{"visit": 1, "call": 1}}); err != nil {
		t.Fatal(err)
	}
	addRec(t, b, "ask", 1, 1, req, resp)
	req2 := req
	req2.Messages = append(append([]agents.Message{}, req.Messages...),
		agents.Message{Role: agents.RoleAssistant, ToolCalls: resp.ToolCalls},
		agents.Message{Role: agents.RoleTool, ToolCallID: "c1", Name: "board_read", Content: "no such key", IsError: true})
	resp2 := agents.Response{Text: "done", Usage: agents.Usage{InputTokens: 20, OutputTokens: 2}, FinishReason: "stop", Model: "gpt-4o-2024", CostUSD: 0.001}
	now = at(300)
	if _, err := b.Append(board.Entry{Section: agents.Section, Role: agents.RoleTool, Author: "coder", Label: "ask",
		Content: "no such key", Meta: map[string]any{"visit": 1, "call": 2, "tool_call_id": "c1", "tool": "board_read", "is_error": true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(board.Entry{Section: agents.Section, Role: agents.RoleAssistant, Author: "coder", Label: "ask",
		Content: "done", Meta: map[string]any{"visit": 1, "call": 2}}); err != nil {
		t.Fatal(err)
	}
	addRec(t, b, "ask", 1, 2, req2, resp2)
	rec(t, b, board.StepRecord{Label: "ask", Visit: 1, Type: "llm", Status: "succeeded", StartedAt: at(10), FinishedAt: at(310), Attempts: 1},
		map[string]any{"output": "done " + secret, "agent": "coder", "model": "gpt-4o-2024", "calls": 2,
			"usage": map[string]any{"input_tokens": 31, "output_tokens": 9, "cost_usd": 0.0031}})
	rec(t, b, board.StepRecord{Label: "patch", Visit: 1, Type: "apply_diff", Status: "succeeded", StartedAt: at(320), FinishedAt: at(330)},
		map[string]any{"files": []any{map[string]any{"path": "a.go", "op": "modify", "added": 3, "removed": 1},
			map[string]any{"path": "b.go", "op": "create", "added": 10, "removed": 0}}})
	rec(t, b, board.StepRecord{Label: "tests", Visit: 1, Type: "test", Status: "succeeded", StartedAt: at(340), FinishedAt: at(400)},
		map[string]any{"passed": true, "exit_code": 0, "counts": map[string]any{"total": 5, "passed": 4, "failed": 0, "skipped": 1}})
	rec(t, b, board.StepRecord{Label: "each[0]", Visit: 1, Type: "command", Parent: "each", Status: "succeeded", StartedAt: at(410), FinishedAt: at(450)},
		map[string]any{"exit_code": 0, "stdout": "hello"})
	rec(t, b, board.StepRecord{Label: "each[1]", Visit: 1, Type: "command", Parent: "each", Status: "succeeded", StartedAt: at(410), FinishedAt: at(460)},
		map[string]any{"exit_code": 0})
	rec(t, b, board.StepRecord{Label: "each", Visit: 1, Type: "for_each", Status: "succeeded", StartedAt: at(410), FinishedAt: at(470)}, nil)
	rec(t, b, board.StepRecord{Label: "build", Visit: 1, Type: "command", Status: "failed", StartedAt: at(500), FinishedAt: at(900),
		Attempts: 3, Delays: []int64{100, 200}, Error: "exit 2: " + secret}, map[string]any{"exit_code": 2, "stderr": secret})
	return b
}

func addRec(t *testing.T, b *board.Board, label string, visit, call int, req agents.Request, resp agents.Response) {
	t.Helper()
	canon, sum, err := req.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(resp)
	if err := b.AddRecording(board.Recording{Label: label, Visit: visit, Kind: agents.KindLLM, Call: call, Agent: "coder",
		RequestSHA256: sum, Request: canon, Response: out}); err != nil {
		t.Fatal(err)
	}
}

// export writes b's spans; o.Types nil: the built-in step types, as
// runner-otel gives them.
func export(t *testing.T, b *board.Board, o Options) []tracetest.SpanStub {
	t.Helper()
	if o.Types == nil {
		o.Types = steps.Registry()
	}
	exp := tracetest.NewInMemoryExporter()
	if _, err := Write(context.Background(), b, exp, o); err != nil {
		t.Fatal(err)
	}
	return exp.GetSpans()
}

func byName(t *testing.T, spans []tracetest.SpanStub) map[string][]tracetest.SpanStub {
	m := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		m[s.Name] = append(m[s.Name], s)
	}
	return m
}

func attrs(s tracetest.SpanStub) map[string]any {
	m := map[string]any{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

func one(t *testing.T, m map[string][]tracetest.SpanStub, name string) tracetest.SpanStub {
	t.Helper()
	if len(m[name]) != 1 {
		var names []string
		for n := range m {
			names = append(names, n)
		}
		t.Fatalf("want one span %q, got %d; spans: %v", name, len(m[name]), names)
	}
	return m[name][0]
}

// TestSpanTree: the trace of a run has the run at its root, each step
// visit under it (a for_each's items under the for_each), each model
// call and tool call under its step, named and attributed as the GenAI
// conventions say, at the times the board recorded.
func TestSpanTree(t *testing.T) {
	spans := export(t, sample(t), Options{Mask: mask.New(secret).String})
	m := byName(t, spans)
	if len(spans) != 11 {
		t.Errorf("got %d spans, want 11 (run, 7 steps, 2 chats, 1 tool)", len(spans))
	}
	root := one(t, m, "invoke_workflow fix-it")
	if root.Parent.IsValid() {
		t.Errorf("the run's span has a parent")
	}
	if !root.StartTime.Equal(at(0)) || !root.EndTime.Equal(at(1000)) {
		t.Errorf("run span %v..%v, want the run's recorded times", root.StartTime, root.EndTime)
	}
	if a := attrs(root); a["gen_ai.operation.name"] != "invoke_workflow" || a["runner.run.id"] != "01RUN" || a["runner.run.status"] != "failed" {
		t.Errorf("run attributes %v", a)
	}
	if root.Status.Code.String() != "Error" {
		t.Errorf("a failed run's span has status %v", root.Status)
	}
	if root.Resource.Len() == 0 {
		t.Errorf("no resource")
	}
	agent := one(t, m, "invoke_agent coder")
	if agent.Parent.SpanID() != root.SpanContext.SpanID() {
		t.Errorf("the llm step is not under the run")
	}
	if a := attrs(agent); a["gen_ai.operation.name"] != "invoke_agent" || a["gen_ai.agent.name"] != "coder" || a["runner.step.visit"] != int64(1) {
		t.Errorf("agent attributes %v", a)
	}
	chats := m["chat gpt-4o"]
	if len(chats) != 2 {
		t.Fatalf("want 2 chat spans, got %d", len(chats))
	}
	for _, c := range chats {
		if c.Parent.SpanID() != agent.SpanContext.SpanID() {
			t.Errorf("chat span not under its step")
		}
		if c.SpanKind.String() != "client" {
			t.Errorf("chat span kind %v", c.SpanKind)
		}
	}
	first := chats[0]
	if attrs(first)["runner.call"] != int64(1) {
		first = chats[1]
	}
	want := map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o",
		"gen_ai.response.model": "gpt-4o-2024", "gen_ai.usage.input_tokens": int64(11), "gen_ai.usage.output_tokens": int64(7),
		"gen_ai.usage.cache_read.input_tokens": int64(3), "gen_ai.request.temperature": 0.5, "runner.cost_usd": 0.0021}
	a := attrs(first)
	for k, v := range want {
		if a[k] != v {
			t.Errorf("chat %s = %v, want %v", k, a[k], v)
		}
	}
	if fr, _ := a["gen_ai.response.finish_reasons"].([]string); len(fr) != 1 || fr[0] != "tool_calls" {
		t.Errorf("finish reasons %v", a["gen_ai.response.finish_reasons"])
	}
	if !first.StartTime.Equal(at(10)) || !first.EndTime.Equal(at(150)) {
		t.Errorf("first call %v..%v, want from the step's start to its answer", first.StartTime.Sub(t0), first.EndTime.Sub(t0))
	}
	tool := one(t, m, "execute_tool board_read")
	if a := attrs(tool); a["gen_ai.tool.name"] != "board_read" || a["gen_ai.tool.call.id"] != "c1" || a["gen_ai.operation.name"] != "execute_tool" {
		t.Errorf("tool attributes %v", a)
	}
	if tool.Parent.SpanID() != agent.SpanContext.SpanID() || tool.Status.Code.String() != "Error" {
		t.Errorf("tool span: parent %v, status %v; want under the step, failed (the tool said is_error)", tool.Parent.SpanID(), tool.Status)
	}

	each := one(t, m, "step each")
	for _, n := range []string{"step each[0]", "step each[1]"} {
		it := one(t, m, n)
		if it.Parent.SpanID() != each.SpanContext.SpanID() {
			t.Errorf("%s is not under its for_each", n)
		}
	}
	if a := attrs(one(t, m, "step each[1]")); a["runner.step.item"] != int64(1) {
		t.Errorf("item attribute %v", a["runner.step.item"])
	}
	diff := attrs(one(t, m, "step patch"))
	if diff["runner.diff.files"] != int64(2) || diff["runner.diff.lines_added"] != int64(13) || diff["runner.diff.lines_removed"] != int64(1) {
		t.Errorf("diff stats %v", diff)
	}
	tests := attrs(one(t, m, "step tests"))
	if tests["runner.result.counts.passed"] != int64(4) || tests["runner.result.counts.skipped"] != int64(1) || tests["runner.result.passed"] != true {
		t.Errorf("test counts %v", tests)
	}
	build := one(t, m, "step build")
	ba := attrs(build)
	if ba["runner.result.exit_code"] != int64(2) || ba["runner.step.status"] != "failed" || ba["runner.step.attempts"] != int64(3) || ba["error.type"] != "failed" {
		t.Errorf("failed step attributes %v", ba)
	}
	if build.Status.Code.String() != "Error" || build.Status.Description != "exit 2: ***" {
		t.Errorf("failed step status %v (want Error, the error masked)", build.Status)
	}
	if _, ok := ba["runner.result.stderr"]; ok {
		t.Errorf("a step's output is on its span")
	}
}

// TestContentOnlyWhenAskedAndMasked: message content, tool arguments and
// results are on the spans only with Content (the conventions' opt-in),
// and then with the run's secrets masked; without it no span carries
// them, nor a secret anywhere.
func TestContentOnlyWhenAskedAndMasked(t *testing.T) {
	contentKeys := []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
		"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}
	for _, content := range []bool{false, true} {
		spans := export(t, sample(t), Options{Mask: mask.New(secret).String, Content: content})
		found := map[string]bool{}
		for _, s := range spans {
			if strings.Contains(s.Status.Description, secret) {
				t.Errorf("content=%v: %s's status shows the secret", content, s.Name)
			}
			for k, v := range attrs(s) {
				found[k] = true
				if strings.Contains(fmt.Sprint(v), secret) {
					t.Errorf("content=%v: %s %s shows the secret", content, s.Name, k)
				}
			}
		}
		for _, k := range contentKeys {
			if found[k] != content {
				t.Errorf("content=%v: attribute %s present=%v", content, k, found[k])
			}
		}
	}
	m := byName(t, export(t, sample(t), Options{Mask: mask.New(secret).String, Content: true}))
	for _, c := range m["chat gpt-4o"] {
		a := attrs(c)
		if a["runner.call"] != int64(2) {
			continue
		}
		var msgs []map[string]any
		if err := json.Unmarshal([]byte(a["gen_ai.input.messages"].(string)), &msgs); err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 3 || msgs[0]["role"] != "user" || msgs[2]["role"] != "tool" {
			t.Errorf("input messages %v", msgs)
		}
		if !strings.Contains(a["gen_ai.input.messages"].(string), "the key is ***") {
			t.Errorf("input messages not masked as expected: %s", a["gen_ai.input.messages"])
		}
	}
}

// TestSameRunSameIDs: exporting a run twice (live, then `runner trace`)
// gives the same trace and span IDs, so a backend keeps one trace; a
// different run gets a different trace.
func TestSameRunSameIDs(t *testing.T) {
	ids := func(b *board.Board) map[string]string {
		m := map[string]string{}
		for _, s := range export(t, b, Options{}) {
			m[s.Name+" "+s.SpanContext.SpanID().String()] = s.SpanContext.TraceID().String()
		}
		return m
	}
	a, b := ids(sample(t)), ids(sample(t))
	if len(a) != 11 {
		t.Errorf("%d distinct spans, want 11", len(a))
	}
	for k, v := range a {
		if b[k] != v {
			t.Errorf("span %s: trace %s, then %q", k, v, b[k])
		}
	}
	other := sample(t)
	other.UpdateRun(func(r *board.Run) { r.ID = "02OTHER" })
	for _, v := range ids(other) {
		for _, w := range a {
			if v == w {
				t.Fatalf("another run has the same trace ID %s", v)
			}
		}
		break
	}
}

// TestOTLPJSONFile: -o writes OTLP JSON as the spec says (hex IDs,
// numeric enums), one request a line, and nothing on a bad path.
func TestOTLPJSONFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.json")
	n, err := Export(context.Background(), sample(t), Config{File: path})
	if err != nil || n != 11 {
		t.Fatalf("Export: %d spans, %v", n, err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []struct {
					TraceID      string `json:"traceId"`
					SpanID       string `json:"spanId"`
					ParentSpanID string `json:"parentSpanId"`
					Name         string `json:"name"`
					Kind         int    `json:"kind"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if err := json.Unmarshal([]byte(lines[0]), &req); err != nil {
		t.Fatalf("not OTLP JSON: %v", err)
	}
	hex32, hex16 := regexp.MustCompile(`^[0-9a-f]{32}$`), regexp.MustCompile(`^[0-9a-f]{16}$`)
	count := 0
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				count++
				if !hex32.MatchString(s.TraceID) || !hex16.MatchString(s.SpanID) || (s.ParentSpanID != "" && !hex16.MatchString(s.ParentSpanID)) {
					t.Errorf("%s: IDs not hex: %q %q %q", s.Name, s.TraceID, s.SpanID, s.ParentSpanID)
				}
				if s.Kind == 0 {
					t.Errorf("%s: kind not a number", s.Name)
				}
			}
		}
	}
	if count != 11 {
		t.Errorf("%d spans in the file, want 11", count)
	}
	if _, err := Export(context.Background(), sample(t), Config{File: filepath.Join(dir, "no", "such", "dir", "t.json")}); err == nil {
		t.Errorf("writing into a missing directory worked")
	}
}

// TestDeadCollector: a collector that refuses or never answers ends the
// export with an error within its timeout.
func TestDeadCollector(t *testing.T) {
	_, err := Export(context.Background(), sample(t), Config{Endpoint: "http://127.0.0.1:1/v1/traces", Timeout: 300 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("export to a closed port: %v", err)
	}
}

var _ sdktrace.SpanExporter = (*collector)(nil)

// TestItemOutsideItsGroupStaysUnderIt: a for_each item whose recorded
// times stick out of its group's (a run on Temporal: the group's times
// are the workflow's clock, the items' the workers') is still a child of
// its group's visit, and of the visit it overlaps most when the group ran
// twice; never a root of its own.
func TestItemOutsideItsGroupStaysUnderIt(t *testing.T) {
	cases := []struct {
		name                string
		start, end          int // the item's times, ms
		wantVisit           int64
		groupVisits         [][2]int
		itemVisit, itemSpan int
	}{
		{"inside", 110, 150, 1, [][2]int{{100, 200}}, 1, 0},
		{"starts before its group", 95, 150, 1, [][2]int{{100, 200}}, 1, 0},
		{"ends after its group", 150, 204, 1, [][2]int{{100, 200}}, 1, 0},
		{"both", 98, 203, 1, [][2]int{{100, 200}}, 1, 0},
		{"second visit, sticking out", 299, 350, 2, [][2]int{{100, 200}, {300, 400}}, 1, 0},
		{"second visit, past its end", 320, 401, 2, [][2]int{{100, 200}, {300, 400}}, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fin := at(1000)
			b := board.New(board.Run{ID: "01RUN", PlanPath: "plan.yaml", Status: board.StatusSucceeded, StartedAt: at(0), FinishedAt: &fin})
			rec(t, b, board.StepRecord{Label: "each[0]", Visit: 1, Type: "command", Parent: "each", Status: "succeeded",
				StartedAt: at(c.start), FinishedAt: at(c.end)}, map[string]any{"exit_code": 0})
			for i, g := range c.groupVisits {
				rec(t, b, board.StepRecord{Label: "each", Visit: i + 1, Type: "for_each", Status: "succeeded", StartedAt: at(g[0]), FinishedAt: at(g[1])}, nil)
			}
			m := byName(t, export(t, b, Options{}))
			item := one(t, m, "step each[0]")
			var parent tracetest.SpanStub
			for _, g := range m["step each"] {
				if g.SpanContext.SpanID() == item.Parent.SpanID() {
					parent = g
				}
			}
			if !parent.SpanContext.IsValid() || attrs(parent)["runner.step.visit"] != c.wantVisit {
				t.Errorf("the item's parent is %v (%v), want visit %d of each", item.Parent.SpanID(), attrs(parent)["runner.step.visit"], c.wantVisit)
			}
		})
	}
}

// A sub-agent an llm step's agent spawned is an invoke_agent span of its
// own under the visit that spawned it (the step, or another sub-agent),
// with its model calls under it.
func TestSpawnedAgentUnderItsCaller(t *testing.T) {
	const swarm = `version: 1
name: swarm
agents:
  root: {provider: openai, model: gpt-4o, spawns: [researcher]}
  researcher: {provider: openai, model: gpt-4o-mini, spawns: [critic]}
  critic: {provider: anthropic, model: claude-x}
steps:
  - {label: ask, type: llm, agent: root, tools: [spawn], prompt: hi}
`
	fin := at(1000)
	b := board.New(board.Run{ID: "01RUN", PlanPath: "plan.yaml", PlanSource: swarm, Status: board.StatusSucceeded, StartedAt: at(0), FinishedAt: &fin})
	addRec(t, b, "ask/spawn-1-researcher", 1, 1, agents.Request{Model: "gpt-4o-mini"},
		agents.Response{Text: "facts", Usage: agents.Usage{InputTokens: 5, OutputTokens: 2}, Model: "gpt-4o-mini"})
	llm := func(agent string, calls int) map[string]any {
		return map[string]any{"output": "ok", "agent": agent, "calls": calls, "usage": map[string]any{"input_tokens": 5, "output_tokens": 2}}
	}
	rec(t, b, board.StepRecord{Label: "ask/spawn-1-researcher/spawn-2-critic", Visit: 1, Type: "llm", Parent: "ask/spawn-1-researcher",
		Agent: "critic", Status: "succeeded", StartedAt: at(100), FinishedAt: at(200)}, llm("critic", 0))
	rec(t, b, board.StepRecord{Label: "ask/spawn-1-researcher", Visit: 1, Type: "llm", Parent: "ask",
		Agent: "researcher", Status: "succeeded", StartedAt: at(50), FinishedAt: at(300)}, llm("researcher", 1))
	rec(t, b, board.StepRecord{Label: "ask", Visit: 1, Type: "llm", Status: "succeeded", StartedAt: at(10), FinishedAt: at(400)}, llm("root", 1))

	spans := export(t, b, Options{})
	m := byName(t, spans)
	byID := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
	}
	for _, c := range []struct{ span, parent, label string }{
		{"invoke_agent root", "invoke_workflow swarm", "ask"},
		{"invoke_agent researcher", "invoke_agent root", "ask/spawn-1-researcher"},
		{"invoke_agent critic", "invoke_agent researcher", "ask/spawn-1-researcher/spawn-2-critic"},
		{"chat gpt-4o-mini", "invoke_agent researcher", ""},
	} {
		s := one(t, m, c.span)
		if p := byID[s.Parent.SpanID().String()]; p.Name != c.parent {
			t.Errorf("%s: parent %q, want %q", c.span, p.Name, c.parent)
		}
		if c.label != "" && attrs(s)["runner.step.label"] != c.label {
			t.Errorf("%s: runner.step.label %v, want %s", c.span, attrs(s)["runner.step.label"], c.label)
		}
	}
	if a := attrs(one(t, m, "invoke_agent researcher")); a["gen_ai.request.model"] != "gpt-4o-mini" || a["gen_ai.usage.input_tokens"] != int64(5) {
		t.Errorf("the sub-agent's span: %v", a)
	}
}

package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/testutil/otelcoltest"
)

// tracedPlan has every kind of span: model calls under an llm step (a
// priced agent, so tokens and cost), a tool call the model asks for, a
// for_each's items under it, a secret the plan names, and a command that
// fails with exit code 3 at the end.
const tracedPlan = `version: 1
name: traced
secrets: [TRACE_TOKEN]
agents:
  bot:
    provider: script
    model: scripted-bot
    price: {input: 1000, output: 2000}
    board: {write: ["notes/*"]}
    responses:
      ask:
        - tool_calls:
            - name: board_write
              args: {key: notes/first, value: noted}
        - second answer
steps:
  - label: ask
    type: llm
    agent: bot
    prompt: "say something (token ${{ secrets.TRACE_TOKEN }})"
    tools: [board]
  - label: each
    type: command
    for_each: '["a", "b"]'
    run: echo "item ${{ item }}"
  - label: boom
    type: command
    run: echo "bad ${TOKEN}" >&2; exit 3
    env: {TOKEN: "${{ secrets.TRACE_TOKEN }}"}
`

const traceToken = "tok-4f9a8b7c6d5e"

// tracedSpans is how many spans a run of tracedPlan makes: the run, ask,
// its two model calls and one tool call, each and its two items, boom.
const tracedSpans = 9

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// checkTree asserts the span tree of a run of tracedPlan as the
// collector received it: names, kinds, parents, the conventions'
// attributes, the failed step's exit code and status.
func checkTree(t *testing.T, spans []otelcoltest.Span) otelcoltest.Span {
	t.Helper()
	by := map[string][]otelcoltest.Span{}
	for _, s := range spans {
		by[s.Name] = append(by[s.Name], s)
	}
	get := func(name string, n int) []otelcoltest.Span {
		t.Helper()
		if len(by[name]) != n {
			var names []string
			for _, s := range spans {
				names = append(names, s.Name)
			}
			t.Fatalf("want %d span(s) %q, got %d; spans: %v", n, name, len(by[name]), names)
		}
		return by[name]
	}
	const internal, client, errorStatus = 1, 3, 2
	root := get("invoke_workflow traced", 1)[0]
	if root.Parent != "" || root.Attrs["gen_ai.operation.name"] != "invoke_workflow" || root.Attrs["gen_ai.workflow.name"] != "traced" ||
		root.Attrs["runner.run.status"] != "failed" || root.Kind != internal || root.Service != "runner" {
		t.Errorf("run span: parent %q, kind %d, service %q, attributes %v", root.Parent, root.Kind, root.Service, root.Attrs)
	}
	if root.StatusCode != errorStatus || !strings.Contains(root.StatusMessage, "boom") {
		t.Errorf("failed run's span status %d %q", root.StatusCode, root.StatusMessage)
	}
	agent := get("invoke_agent bot", 1)[0]
	if agent.Parent != root.ID || agent.Attrs["gen_ai.agent.name"] != "bot" || agent.Attrs["gen_ai.operation.name"] != "invoke_agent" ||
		agent.Attrs["runner.step.label"] != "ask" || agent.Attrs["runner.step.status"] != "succeeded" {
		t.Errorf("llm step span: parent %q (root %q), attributes %v", agent.Parent, root.ID, agent.Attrs)
	}
	chats := get("chat scripted-bot", 2)
	for i, chat := range chats {
		if chat.Parent != agent.ID || chat.Kind != client || chat.Attrs["gen_ai.operation.name"] != "chat" ||
			chat.Attrs["gen_ai.provider.name"] != "script" || chat.Attrs["gen_ai.request.model"] != "scripted-bot" {
			t.Errorf("chat span %d: parent %q, kind %d, attributes %v", i, chat.Parent, chat.Kind, chat.Attrs)
		}
		in, _ := chat.Attrs["gen_ai.usage.input_tokens"].(int64)
		out, isInt := chat.Attrs["gen_ai.usage.output_tokens"].(int64)
		cost, _ := chat.Attrs["runner.cost_usd"].(float64)
		// The call that only asks for a tool answers no text: 0 tokens out.
		text := fmt.Sprint(chat.Attrs["gen_ai.response.finish_reasons"]) == "[stop]"
		if in <= 0 || !isInt || text && out <= 0 || cost <= 0 {
			t.Errorf("chat span %d: tokens %v in, %v out, cost %v", i, chat.Attrs["gen_ai.usage.input_tokens"],
				chat.Attrs["gen_ai.usage.output_tokens"], chat.Attrs["runner.cost_usd"])
		}
		if chat.Attrs["gen_ai.input.messages"] != nil {
			t.Errorf("message content sent without OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
		}
	}
	reasons := fmt.Sprint(chats[0].Attrs["gen_ai.response.finish_reasons"]) + fmt.Sprint(chats[1].Attrs["gen_ai.response.finish_reasons"])
	if !strings.Contains(reasons, "tool_calls") || !strings.Contains(reasons, "stop") {
		t.Errorf("finish reasons of the two calls: %s", reasons)
	}
	tool := get("execute_tool board_write", 1)[0]
	if tool.Parent != agent.ID || tool.Attrs["gen_ai.operation.name"] != "execute_tool" || tool.Attrs["gen_ai.tool.name"] != "board_write" ||
		tool.Attrs["gen_ai.tool.call.id"] == nil || tool.StatusCode == errorStatus {
		t.Errorf("tool span: parent %q (agent %q), status %d, attributes %v", tool.Parent, agent.ID, tool.StatusCode, tool.Attrs)
	}
	group := get("step each", 1)[0]
	if group.Parent != root.ID {
		t.Errorf("for_each span's parent %q, want the run %q", group.Parent, root.ID)
	}
	for i, n := range []string{"step each[0]", "step each[1]"} {
		if it := get(n, 1)[0]; it.Parent != group.ID || it.Attrs["runner.result.exit_code"] != int64(0) ||
			it.Attrs["runner.step.item"] != int64(i) || it.StatusCode == errorStatus {
			t.Errorf("%s: parent %q (group %q), attributes %v", n, it.Parent, group.ID, it.Attrs)
		}
	}
	boom := get("step boom", 1)[0]
	if boom.Parent != root.ID || boom.Attrs["runner.result.exit_code"] != int64(3) || boom.StatusCode != errorStatus ||
		boom.Attrs["runner.step.status"] != "failed" || boom.Attrs["runner.step.type"] != "command" {
		t.Errorf("failed step span: status %d, attributes %v", boom.StatusCode, boom.Attrs)
	}
	for _, s := range spans {
		if s.TraceID != root.TraceID || s.End.Before(s.Start) {
			t.Errorf("span %s: trace %s (run's %s), %s to %s", s.Name, s.TraceID, root.TraceID, s.Start, s.End)
		}
	}
	if len(spans) != tracedSpans {
		t.Errorf("%d spans, want %d (run, ask, its 2 calls and 1 tool call, each and its 2 items, boom)", len(spans), tracedSpans)
	}
	return root
}

func writeTracedPlan(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(p, []byte(tracedPlan), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func runID(t *testing.T, bb string) string {
	t.Helper()
	b, err := board.Load(bb)
	if err != nil {
		t.Fatal(err)
	}
	return b.Run().ID
}

// TestTraceReachesCollector: a run with OTEL_EXPORTER_OTLP_ENDPOINT set
// (or --otlp-endpoint) sends its trace to a real OpenTelemetry
// Collector, which decodes the span tree, names and attributes the
// conventions say, with no secret anywhere in what it received, and the
// run exits as it would untraced; `runner trace` sends a saved, untraced
// run's trace with its recorded times; a replay with the variable set
// sends its own trace, which says what it replays.
func TestTraceReachesCollector(t *testing.T) {
	col := otelcoltest.Start(t)
	dir := t.TempDir()
	plan := writeTracedPlan(t, dir)
	env := []string{"TRACE_TOKEN=" + traceToken, "HOME=" + dir}

	live := runIn(t, dir, append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.Endpoint), nil, "run", plan, "-q", "--out", "live.json")
	if live.code != exitFailed || strings.Contains(live.stderr, "warning") {
		t.Fatalf("traced run: exit %d (want %d, as untraced), stderr:\n%s", live.code, exitFailed, live.stderr)
	}
	checkTree(t, col.Spans(t, runID(t, filepath.Join(dir, "live.json")), tracedSpans))

	flag := runIn(t, dir, env, nil, "run", plan, "-q", "--out", "flag.json", "--otlp-endpoint", col.Endpoint+"/v1/traces")
	if flag.code != exitFailed || strings.Contains(flag.stderr, "warning") {
		t.Fatalf("run with --otlp-endpoint: exit %d, stderr:\n%s", flag.code, flag.stderr)
	}
	checkTree(t, col.Spans(t, runID(t, filepath.Join(dir, "flag.json")), tracedSpans))

	// A run made without tracing, traced afterwards, at its recorded times.
	quiet := runIn(t, dir, env, nil, "run", plan, "-q", "--out", "saved.json")
	if quiet.code != exitFailed {
		t.Fatalf("untraced run: exit %d\n%s", quiet.code, quiet.stderr)
	}
	saved := filepath.Join(dir, "saved.json")
	tr := runIn(t, dir, env, nil, "trace", saved, "--otlp-endpoint", col.Endpoint+"/v1/traces")
	if tr.code != exitOK || !strings.Contains(tr.stderr, fmt.Sprintf("%d spans", tracedSpans)) {
		t.Fatalf("runner trace: exit %d\n%s", tr.code, tr.stderr)
	}
	b, err := board.Load(saved)
	if err != nil {
		t.Fatal(err)
	}
	spans := col.Spans(t, b.Run().ID, tracedSpans)
	root := checkTree(t, spans)
	if fin := b.Run().FinishedAt; fin == nil || !root.Start.Equal(b.Run().StartedAt) || !root.End.Equal(*fin) {
		t.Errorf("the saved run's trace spans %s to %s, the run %s to %v", root.Start, root.End, b.Run().StartedAt, fin)
	}
	for _, s := range b.Steps() {
		name := "step " + s.Label
		if s.Type == "llm" {
			name = "invoke_agent bot"
		}
		for _, sp := range spans {
			if sp.Name == name && sp.Attrs["runner.step.visit"] == int64(s.Visit) && (!sp.Start.Equal(s.StartedAt) || !sp.End.Equal(s.FinishedAt)) {
				t.Errorf("span %s: %s to %s, recorded %s to %s", name, sp.Start, sp.End, s.StartedAt, s.FinishedAt)
			}
		}
	}

	// A replay of it, traced.
	rp := runIn(t, dir, append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.Endpoint), nil, "replay", saved, "--offline", "--out", "replay.json")
	if rp.code != exitOK && rp.code != exitFailed || strings.Contains(rp.stderr, "warning") {
		t.Fatalf("traced replay: exit %d\n%s", rp.code, rp.stderr)
	}
	rroot := checkTree(t, col.Spans(t, runID(t, filepath.Join(dir, "replay.json")), tracedSpans))
	if rroot.Attrs["runner.replay_of"] != saved || rroot.TraceID == root.TraceID {
		t.Errorf("the replay's trace (%s) is not its own, or does not say it replays %s: %v", rroot.TraceID, saved, rroot.Attrs)
	}

	// Nothing the collector received shows the secret: no attribute, no
	// status message, no resource.
	if raw := col.Raw(t); strings.Contains(raw, traceToken) || !strings.Contains(raw, "invoke_workflow traced") {
		t.Errorf("the collector's data shows the secret, or has no run span")
	}
}

// TestCollectorTroubleNeverFailsARun: whatever is wrong with where the
// trace goes (nothing listening, a collector that never answers, an
// endpoint that is no URL, runner-otel missing), the run exits, prints
// and saves exactly as untraced, with one warning saying the trace was
// not exported and why.
func TestCollectorTroubleNeverFailsARun(t *testing.T) {
	hole, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	go func() {
		var held []net.Conn
		for {
			c, err := hole.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	closed := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	cases := []struct {
		name string
		env  []string
		want string // in the warning
	}{
		{"nothing listening", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + closed}, "connection refused"},
		{"never answers", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + hole.Addr().String(), "OTEL_EXPORTER_OTLP_TIMEOUT=300"}, "trace not exported"},
		{"not a URL", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=::nope"}, "trace not exported"},
		{"grpc asked for", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + closed, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, "http/protobuf only"},
		{"bad timeout", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + closed, "OTEL_EXPORTER_OTLP_TIMEOUT=soon"}, "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{"no runner-otel", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + closed, "RUNNER_OTEL_BIN=/nonexistent/runner-otel"}, "RUNNER_OTEL_BIN"},
	}
	dir := t.TempDir()
	plan := writeTracedPlan(t, dir)
	base := []string{"TRACE_TOKEN=" + traceToken, "HOME=" + dir}
	want := runIn(t, dir, base, nil, "run", plan, "--log-format", "json", "--out", "untraced.json")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := strings.ReplaceAll(c.name, " ", "-") + ".json"
			got := runIn(t, dir, append(base, c.env...), nil, "run", plan, "--log-format", "json", "--out", out)
			if got.code != want.code {
				t.Errorf("exit %d, untraced %d", got.code, want.code)
			}
			if strings.Replace(got.stdout, out, "X", 1) != strings.Replace(want.stdout, "untraced.json", "X", 1) {
				t.Errorf("stdout %q, untraced %q", got.stdout, want.stdout)
			}
			if !strings.Contains(got.stderr, "warning") || !strings.Contains(got.stderr, c.want) {
				t.Errorf("stderr has no warning saying %q:\n%s", c.want, got.stderr)
			}
			if strings.Contains(got.stderr, traceToken) {
				t.Errorf("the secret is in stderr")
			}
			b, err := board.Load(filepath.Join(dir, out))
			if err != nil || len(b.Steps()) != 5 {
				t.Errorf("blackboard: %v", err)
			}
		})
	}
}

// TestTraceOff: without an endpoint runner never starts runner-otel
// (a run with RUNNER_OTEL_BIN naming nothing says nothing of it), and
// `runner trace` with nowhere to send says so and exits 2.
func TestTraceOff(t *testing.T) {
	dir := t.TempDir()
	plan := writeTracedPlan(t, dir)
	env := []string{"TRACE_TOKEN=" + traceToken, "HOME=" + dir, "RUNNER_OTEL_BIN=/nonexistent/runner-otel",
		"OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="}
	r := runIn(t, dir, env, nil, "run", plan, "-q", "--out", "bb.json")
	if r.code != exitFailed || strings.Contains(r.stderr, "runner-otel") || strings.Contains(r.stderr, "trace") {
		t.Errorf("untraced run: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	for _, off := range [][]string{{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9", "OTEL_SDK_DISABLED=true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9", "OTEL_TRACES_EXPORTER=none"}} {
		r := runIn(t, dir, append(env, off...), nil, "run", plan, "-q", "--out", "bb2.json")
		if strings.Contains(r.stderr, "runner-otel") {
			t.Errorf("%v: runner-otel started:\n%s", off, r.stderr)
		}
	}
	tr := runIn(t, dir, env, nil, "trace", "bb.json")
	if tr.code != exitUsage || !strings.Contains(tr.stderr, "nowhere to send the trace") {
		t.Errorf("runner trace with nowhere to send: exit %d\n%s", tr.code, tr.stderr)
	}
}

// TestTraceToFile: `runner trace -o FILE` writes OTLP JSON, every span of
// the run in it; -o - writes it to stdout.
func TestTraceToFile(t *testing.T) {
	dir := t.TempDir()
	plan := writeTracedPlan(t, dir)
	env := []string{"TRACE_TOKEN=" + traceToken, "HOME=" + dir}
	runIn(t, dir, env, nil, "run", plan, "-q", "--out", "bb.json")
	r := runIn(t, dir, env, nil, "trace", "bb.json", "-o", "trace.json")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := runIn(t, dir, env, nil, "trace", "bb.json", "-o", "-")
	for _, text := range []string{string(raw), out.stdout} {
		for _, name := range []string{"invoke_workflow traced", "invoke_agent bot", "chat scripted-bot", "execute_tool board_write", "step each[1]", "step boom"} {
			if !strings.Contains(text, `"name":"`+name+`"`) {
				t.Errorf("no span %q in the OTLP JSON", name)
			}
		}
		if strings.Contains(text, traceToken) {
			t.Errorf("the secret is in the trace")
		}
	}
}

// TestTraceBadInput: `runner trace` on what is no saved run says what is
// wrong with which file and exits 2, sending nothing.
func TestTraceBadInput(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"empty.json": "", "notboard.json": `{"hello": 1}`, "broken.json": `{"run": {`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ file, want string }{
		{"missing.json", "missing.json"},
		{"empty.json", "empty.json"},
		{"notboard.json", "notboard.json"},
		{"broken.json", "broken.json"},
	} {
		r := runIn(t, dir, []string{"HOME=" + dir}, nil, "trace", c.file, "-o", "out.json")
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "panic") {
			t.Errorf("%s: exit %d, stderr:\n%s", c.file, r.code, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "out.json")); err == nil {
			t.Errorf("%s: a trace file was written", c.file)
		}
	}
}

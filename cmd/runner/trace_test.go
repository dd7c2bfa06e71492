package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/internal/testtool"
)

// tracedPlan has every kind of span: model calls under an llm step, a
// for_each's items under it, a secret the plan names, and a command that
// fails with exit code 3 at the end.
const tracedPlan = `version: 1
name: traced
secrets: [TRACE_TOKEN]
agents:
  bot: {provider: script, responses: ["first answer", "second answer"]}
steps:
  - label: ask
    type: llm
    agent: bot
    prompt: "say something (token ${{ secrets.TRACE_TOKEN }})"
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

// jaeger is a Jaeger v2 (the OpenTelemetry Collector with Jaeger's
// storage and query) serving OTLP/HTTP and its query API on free ports,
// with in-memory storage: a real OTLP receiver nobody here wrote.
type jaeger struct {
	otlp, query string
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startJaeger(t *testing.T) jaeger {
	t.Helper()
	// Jaeger is not in .ci/install yet: its build (some 2,300 packages)
	// did not finish in an hour on the shared two cores, so this test
	// runs where RUNNER_JAEGER_BIN names a Jaeger v2 binary and skips
	// elsewhere, CI included (docs/tracing.md says how to build it).
	if os.Getenv("RUNNER_JAEGER_BIN") == "" {
		t.Skip("RUNNER_JAEGER_BIN is not set: build Jaeger v1.76.0 as docs/tracing.md says to run this test")
	}
	const how = "build Jaeger v1.76.0 as docs/tracing.md says and set RUNNER_JAEGER_BIN to it"
	bin := testtool.FromEnv(t, "RUNNER_JAEGER_BIN", "jaeger (an OTLP receiver)", how)
	dir := t.TempDir()
	otlpPort, queryPort, grpcPort := freePort(t), freePort(t), freePort(t)
	config := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics: {level: none}
    logs: {level: warn}
extensions:
  jaeger_storage:
    backends:
      mem: {memory: {max_traces: 1000}}
  jaeger_query:
    storage: {traces: mem}
    http: {endpoint: "127.0.0.1:%d"}
    grpc: {endpoint: "127.0.0.1:%d"}
receivers:
  otlp:
    protocols:
      http: {endpoint: "127.0.0.1:%d"}
exporters:
  jaeger_storage_exporter: {trace_storage: mem}
`, queryPort, grpcPort, otlpPort)
	cfg := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir)
	logf, err := os.Create(filepath.Join(dir, "jaeger.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
	})
	j := jaeger{otlp: fmt.Sprintf("http://127.0.0.1:%d", otlpPort), query: fmt.Sprintf("http://127.0.0.1:%d", queryPort)}
	// Ready when both its query API answers and its receiver accepts.
	for i := 0; ; i++ {
		r1, err1 := http.Get(j.query + "/api/services")
		c, err2 := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", otlpPort))
		if err1 == nil {
			r1.Body.Close()
		}
		if err2 == nil {
			c.Close()
		}
		if err1 == nil && err2 == nil && r1.StatusCode == 200 {
			return j
		}
		if i > 600 {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("jaeger did not come up: %v %v\n%s", err1, err2, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// jSpan is a span as Jaeger's query API gives it.
type jSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64 `json:"startTime"` // µs
	Tags      []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

func (s jSpan) tag(k string) any {
	for _, t := range s.Tags {
		if t.Key == k {
			return t.Value
		}
	}
	return nil
}

func (s jSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// traceOf waits until Jaeger holds the trace of run id with want spans
// (its storage takes a moment after the receiver answered) and returns
// its spans.
func (j jaeger) traceOf(t *testing.T, id string, want int) []jSpan {
	t.Helper()
	var last []jSpan
	for i := 0; i < 200; i++ {
		now := time.Now()
		resp, err := http.Get(fmt.Sprintf("%s/api/traces?service=runner&limit=100&start=%d&end=%d",
			j.query, now.Add(-24*time.Hour).UnixMicro(), now.Add(time.Hour).UnixMicro()))
		if err == nil {
			var body struct {
				Data []struct {
					Spans []jSpan `json:"spans"`
				} `json:"data"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&body) // not ready yet: asked again
			resp.Body.Close()
			for _, tr := range body.Data {
				for _, s := range tr.Spans {
					if s.tag("runner.run.id") == id {
						last = tr.Spans
						if len(tr.Spans) >= want {
							return tr.Spans
						}
					}
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("jaeger has no trace of run %s with %d spans (last seen: %d spans)", id, want, len(last))
	return nil
}

// checkTree asserts the span tree of a run of tracedPlan as Jaeger
// received it: names, parents, the conventions' attributes, the failed
// step's exit code and status, no secret anywhere.
func checkTree(t *testing.T, spans []jSpan) jSpan {
	t.Helper()
	by := map[string][]jSpan{}
	for _, s := range spans {
		by[s.OperationName] = append(by[s.OperationName], s)
		for _, tg := range s.Tags {
			if strings.Contains(fmt.Sprint(tg.Value), traceToken) {
				t.Errorf("span %s tag %s shows the secret", s.OperationName, tg.Key)
			}
		}
	}
	get := func(name string, n int) []jSpan {
		t.Helper()
		if len(by[name]) != n {
			var names []string
			for _, s := range spans {
				names = append(names, s.OperationName)
			}
			t.Fatalf("want %d span(s) %q, got %d; spans: %v", n, name, len(by[name]), names)
		}
		return by[name]
	}
	root := get("invoke_workflow traced", 1)[0]
	if root.parent() != "" || root.tag("gen_ai.operation.name") != "invoke_workflow" || root.tag("runner.run.status") != "failed" {
		t.Errorf("run span: parent %q, tags %v", root.parent(), root.Tags)
	}
	if root.tag("otel.status_code") != "ERROR" {
		t.Errorf("failed run's span status %v", root.tag("otel.status_code"))
	}
	agent := get("invoke_agent bot", 1)[0]
	if agent.parent() != root.SpanID || agent.tag("gen_ai.agent.name") != "bot" {
		t.Errorf("llm step span: parent %q (root %q), tags %v", agent.parent(), root.SpanID, agent.Tags)
	}
	chat := get("chat script", 1)[0]
	if chat.parent() != agent.SpanID || chat.tag("gen_ai.operation.name") != "chat" || chat.tag("gen_ai.provider.name") != "script" ||
		chat.tag("span.kind") != "client" {
		t.Errorf("chat span: parent %q, tags %v", chat.parent(), chat.Tags)
	}
	for _, k := range []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "runner.cost_usd", "gen_ai.response.finish_reasons"} {
		if chat.tag(k) == nil {
			t.Errorf("chat span has no %s: %v", k, chat.Tags)
		}
	}
	if chat.tag("gen_ai.input.messages") != nil {
		t.Errorf("message content sent without OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
	}
	group := get("step each", 1)[0]
	for _, n := range []string{"step each[0]", "step each[1]"} {
		if it := get(n, 1)[0]; it.parent() != group.SpanID || fmt.Sprint(it.tag("runner.result.exit_code")) != "0" {
			t.Errorf("%s: parent %q (group %q), tags %v", n, it.parent(), group.SpanID, it.Tags)
		}
	}
	boom := get("step boom", 1)[0]
	if boom.parent() != root.SpanID || fmt.Sprint(boom.tag("runner.result.exit_code")) != "3" ||
		boom.tag("otel.status_code") != "ERROR" || boom.tag("runner.step.status") != "failed" {
		t.Errorf("failed step span: %v", boom.Tags)
	}
	if len(spans) != 6 {
		t.Errorf("%d spans, want 6 (run, ask, its call, each and its 2 items, boom)", len(spans))
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

// TestTraceReachesJaeger: a run with OTEL_EXPORTER_OTLP_ENDPOINT set
// sends its trace to a real receiver, which holds the span tree, names
// and attributes the conventions say, and the run exits as it would
// untraced; `runner trace` sends a saved, untraced run's trace with its
// recorded times; a replay with the variable set sends its own trace,
// which says what it replays.
func TestTraceReachesJaeger(t *testing.T) {
	j := startJaeger(t)
	dir := t.TempDir()
	plan := writeTracedPlan(t, dir)
	env := []string{"TRACE_TOKEN=" + traceToken, "HOME=" + dir}

	live := runIn(t, dir, append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+j.otlp), nil, "run", plan, "-q", "--out", "live.json")
	if live.code != exitFailed || strings.Contains(live.stderr, "warning") {
		t.Fatalf("traced run: exit %d (want %d, as untraced), stderr:\n%s", live.code, exitFailed, live.stderr)
	}
	checkTree(t, j.traceOf(t, runID(t, filepath.Join(dir, "live.json")), 6))

	// A run made without tracing, traced afterwards, at its recorded times.
	quiet := runIn(t, dir, env, nil, "run", plan, "-q", "--out", "saved.json")
	if quiet.code != exitFailed {
		t.Fatalf("untraced run: exit %d\n%s", quiet.code, quiet.stderr)
	}
	saved := filepath.Join(dir, "saved.json")
	tr := runIn(t, dir, env, nil, "trace", saved, "--otlp-endpoint", j.otlp)
	if tr.code != exitOK || !strings.Contains(tr.stderr, "6 spans") {
		t.Fatalf("runner trace: exit %d\n%s", tr.code, tr.stderr)
	}
	b, err := board.Load(saved)
	if err != nil {
		t.Fatal(err)
	}
	root := checkTree(t, j.traceOf(t, b.Run().ID, 6))
	if root.StartTime != b.Run().StartedAt.UnixMicro() {
		t.Errorf("the saved run's trace starts at %d µs, the run at %d", root.StartTime, b.Run().StartedAt.UnixMicro())
	}

	// A replay of it, traced.
	rp := runIn(t, dir, append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+j.otlp), nil, "replay", saved, "--offline", "--out", "replay.json")
	if rp.code != exitOK && rp.code != exitFailed || strings.Contains(rp.stderr, "warning") {
		t.Fatalf("traced replay: exit %d\n%s", rp.code, rp.stderr)
	}
	rroot := checkTree(t, j.traceOf(t, runID(t, filepath.Join(dir, "replay.json")), 6))
	if rroot.tag("runner.replay_of") == nil {
		t.Errorf("the replay's trace does not say what it replays: %v", rroot.Tags)
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
		for _, name := range []string{"invoke_workflow traced", "invoke_agent bot", "chat script", "step each[1]", "step boom"} {
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

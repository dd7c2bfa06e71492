package temporal

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/testutil/otelcoltest"
)

// tracedPlan has every kind of span (the plan of cmd/runner's
// TestTraceReachesCollector): two model calls of a priced script agent
// under an llm step and the tool call it asks for, a for_each's items, a
// secret, and a command failing with exit 3.
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

const (
	traceToken  = "tok-4f9a8b7c6d5e"
	tracedSpans = 9 // the run, ask, 2 model calls, 1 tool call, each and 2 items, boom
)

// The attributes that differ between two runs of one plan whatever the
// engine: the run's own id (span and trace IDs and times are not
// compared either).
var perRun = []string{"runner.run.id"}

// TestDevServerTraceSameAsInProcess: the same plan run in process and on
// Temporal (through runner-temporal with --otlp-endpoint, and through
// `runner run --engine temporal` with OTEL_EXPORTER_OTLP_ENDPOINT) sends
// a real OpenTelemetry Collector the same span tree: names, parents,
// kinds, statuses and attributes, less times and IDs; `runner trace` of
// the Temporal run's saved blackboard sends the same tree again, at the
// recorded times. No secret reaches the collector. The run exits as it
// would untraced (1: a step failed), with no warning.
func TestDevServerTraceSameAsInProcess(t *testing.T) {
	col := otelcoltest.Start(t)
	c := newCluster(t)
	otel := filepath.Join(t.TempDir(), "runner-otel")
	build := exec.Command("go", "build", "-o", otel, "./cmd/runner-otel")
	build.Dir = ".." // runner's module, where runner-otel's SDK is required
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build runner-otel: %v\n%s", err, out)
	}
	t.Setenv("RUNNER_OTEL_BIN", otel)
	t.Setenv("RUNNER_TEMPORAL", c.rt)
	t.Setenv("TRACE_TOKEN", traceToken) // the workers read the secret, the exporters mask it
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	c.worker(t)
	plan := writePlan(t, c.work, tracedPlan)

	check := func(name string, p *proc) {
		t.Helper()
		if code := p.wait(t, 3*time.Minute); code != 1 {
			t.Fatalf("%s: exit %d, want 1 (boom fails):\n%s", name, code, p.out)
		}
		if out := p.out.String(); strings.Contains(out, "warning") || strings.Contains(out, traceToken) {
			t.Errorf("%s printed a warning or the secret:\n%s", name, out)
		}
	}
	spansOf := func(col *otelcoltest.Collector, board string) []otelcoltest.Span {
		t.Helper()
		b := loadBoard(t, board)
		return col.Spans(t, b.Run().ID, tracedSpans)
	}

	local := filepath.Join(c.work, "local.json")
	check("in process", startProc(t, c.work, c.runner, "run", plan, "-q", "--out", local, "--otlp-endpoint", col.Endpoint+"/v1/traces"))
	want := otelcoltest.Tree(spansOf(col, local), perRun...)
	if len(want) != tracedSpans {
		t.Fatalf("in process: %d spans:\n%s", len(want), strings.Join(want, "\n"))
	}

	onTemporal := filepath.Join(c.work, "temporal.json")
	check("runner-temporal run", c.run(t, plan, onTemporal, "--otlp-endpoint", col.Endpoint+"/v1/traces"))
	compare := func(name string, got []string) {
		t.Helper()
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: span tree differs from the in-process run's\n got:\n%s\nwant:\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	tspans := spansOf(col, onTemporal)
	compare("runner-temporal run --otlp-endpoint", otelcoltest.Tree(tspans, perRun...))

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.Endpoint)
	viaCLI := filepath.Join(c.work, "cli.json")
	check("runner run --engine temporal", startProc(t, c.work, c.runner, "run", plan, "-q", "--engine", "temporal", "--temporal", c.srv.hostPort,
		"--task-queue", c.queue, "--blobs", c.blobs, "--out", viaCLI))
	compare("runner run --engine temporal with OTEL_EXPORTER_OTLP_ENDPOINT", otelcoltest.Tree(spansOf(col, viaCLI), perRun...))
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")

	// The saved board of the Temporal run, traced again afterwards (to a
	// collector of its own: the IDs are the live export's), at the times
	// it recorded.
	later := otelcoltest.Start(t)
	tr := startProc(t, c.work, c.runner, "trace", onTemporal, "--otlp-endpoint", later.Endpoint+"/v1/traces")
	if code := tr.wait(t, time.Minute); code != 0 {
		t.Fatalf("runner trace: exit %d\n%s", code, tr.out)
	}
	again := spansOf(later, onTemporal)
	compare("runner trace of the Temporal run's board", otelcoltest.Tree(again, perRun...))
	b := loadBoard(t, onTemporal)
	for _, s := range again {
		if s.Parent == "" && (!s.Start.Equal(b.Run().StartedAt) || b.Run().FinishedAt == nil || !s.End.Equal(*b.Run().FinishedAt)) {
			t.Errorf("the run span of the saved Temporal run: %s to %s, recorded %s to %v", s.Start, s.End, b.Run().StartedAt, b.Run().FinishedAt)
		}
	}
	live := map[string]bool{}
	for _, s := range tspans {
		live[s.ID+s.TraceID] = true
	}
	for _, s := range again {
		if !live[s.ID+s.TraceID] {
			t.Errorf("span %s traced again has other IDs than the live export's", s.Name)
		}
	}

	for _, cl := range []*otelcoltest.Collector{col, later} {
		if strings.Contains(cl.Raw(t), traceToken) {
			t.Errorf("the collector received the secret")
		}
	}
}

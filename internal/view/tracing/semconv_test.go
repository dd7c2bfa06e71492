package tracing

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/testutil/otelcoltest"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"gopkg.in/yaml.v3"
)

// The conventions' own model (testdata/semconv, see its README): span
// definitions with the attributes each requires, and the registry that
// says what each attribute is.

type scAttr struct {
	ID          string    `yaml:"id"`
	Ref         string    `yaml:"ref"`
	Requirement yaml.Node `yaml:"requirement_level"`
	Type        yaml.Node `yaml:"type"`
	Deprecated  yaml.Node `yaml:"deprecated"`
}

type scGroup struct {
	ID         string   `yaml:"id"`
	Type       string   `yaml:"type"`
	Extends    string   `yaml:"extends"`
	SpanKind   string   `yaml:"span_kind"`
	Brief      string   `yaml:"brief"`
	Note       string   `yaml:"note"`
	Attributes []scAttr `yaml:"attributes"`
}

// semconv is the model read from testdata.
type semconv struct {
	groups   map[string]scGroup
	registry map[string]scAttr
}

func loadSemconv(t *testing.T) semconv {
	t.Helper()
	sc := semconv{groups: map[string]scGroup{}, registry: map[string]scAttr{}}
	files, err := filepath.Glob(filepath.Join("testdata", "semconv", "*", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("the vendored conventions: %v %v", files, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Groups []scGroup `yaml:"groups"`
		}
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range doc.Groups {
			sc.groups[g.ID] = g
			for _, a := range g.Attributes {
				if a.ID != "" {
					sc.registry[a.ID] = a
				}
			}
		}
	}
	return sc
}

// attrs are a group's attributes with their requirement levels, its
// own overriding those of the groups it extends.
func (sc semconv) attrs(t *testing.T, id string) map[string]scAttr {
	t.Helper()
	g, ok := sc.groups[id]
	if !ok {
		t.Fatalf("the conventions have no group %s", id)
	}
	out := map[string]scAttr{}
	if g.Extends != "" {
		out = sc.attrs(t, g.Extends)
	}
	for _, a := range g.Attributes {
		if a.Ref == "" {
			continue
		}
		if prev, ok := out[a.Ref]; ok && a.Requirement.Kind == 0 {
			a.Requirement = prev.Requirement
		}
		out[a.Ref] = a
	}
	return out
}

// level is a requirement level's name: required, conditionally_required,
// recommended or opt_in.
func level(n yaml.Node) string {
	if n.Kind == yaml.MappingNode && len(n.Content) > 0 {
		return n.Content[0].Value
	}
	return n.Value
}

// typeOf is a registry attribute's type: a scalar's name, "enum" with
// its members' values.
func typeOf(a scAttr) (string, []string) {
	if a.Type.Kind == yaml.ScalarNode {
		return a.Type.Value, nil
	}
	var e struct {
		Members []struct {
			Value string `yaml:"value"`
		} `yaml:"members"`
	}
	_ = a.Type.Decode(&e)
	var vals []string
	for _, m := range e.Members {
		vals = append(vals, m.Value)
	}
	return "enum", vals
}

// spanOf maps a span's gen_ai.operation.name to the conventions' span
// definition runner follows for it (the in-process kinds: runner's
// agents run in its process, their models are remote).
var spanOf = map[string]string{
	"invoke_workflow": "span.gen_ai.invoke_workflow.internal",
	"invoke_agent":    "span.gen_ai.invoke_agent.internal",
	"chat":            "span.gen_ai.inference.client",
	"execute_tool":    "span.gen_ai.execute_tool.internal",
}

// available are the conditionally required attributes whose condition
// ("if available", "when available") holds for every span of the test
// runs: each names its agent, model, tool and workflow.
var available = map[string]bool{"gen_ai.request.model": true, "gen_ai.agent.name": true, "gen_ai.workflow.name": true}

// gspan is a span as the check sees it, from the SDK or the collector.
type gspan struct {
	name, kind string
	attrs      map[string]any
	failed     bool
}

var spanName = regexp.MustCompile("\\*\\*Span name\\*\\* SHOULD be `([^`]+)`")

// check asserts that every GenAI span follows its definition: its kind,
// its name, each attribute it requires, error.type exactly when it
// failed, and every gen_ai.* and error.* attribute it has is one the
// registry defines, not deprecated, of the registry's type.
func (sc semconv) check(t *testing.T, spans []gspan) (checked map[string]int) {
	t.Helper()
	checked = map[string]int{}
	for _, s := range spans {
		op, _ := s.attrs["gen_ai.operation.name"].(string)
		if op == "" {
			if _, ok := s.attrs["error.type"]; ok != s.failed {
				t.Errorf("%s: failed=%v but error.type %v", s.name, s.failed, s.attrs["error.type"])
			}
			continue
		}
		id, ok := spanOf[op]
		if !ok {
			t.Errorf("%s: operation %q has no span definition here", s.name, op)
			continue
		}
		checked[op]++
		g := sc.groups[id]
		if g.SpanKind != s.kind {
			t.Errorf("%s: kind %s, the conventions say %s", s.name, s.kind, g.SpanKind)
		}
		if m := spanName.FindStringSubmatch(g.Note + g.Brief); m != nil {
			want := regexp.MustCompile(`\{([a-z_.]+)\}`).ReplaceAllStringFunc(m[1], func(k string) string {
				return fmt.Sprint(s.attrs[strings.Trim(k, "{}")])
			})
			if s.name != want {
				t.Errorf("span %q: the conventions name it %q (%s)", s.name, want, m[1])
			}
		} else {
			t.Errorf("%s: no span name in the conventions' note", id)
		}
		for k, a := range sc.attrs(t, id) {
			_, has := s.attrs[k]
			switch lv := level(a.Requirement); {
			case lv == "required" && !has:
				t.Errorf("%s (%s): required %s missing; has %v", s.name, id, k, keys(s.attrs))
			case k == "error.type" && has != s.failed:
				t.Errorf("%s: failed=%v, error.type %v: the conventions want it exactly when the operation failed", s.name, s.failed, s.attrs[k])
			case lv == "conditionally_required" && available[k] && !has:
				t.Errorf("%s (%s): %s is available and conditionally required, missing", s.name, id, k)
			case k == "server.port" && !has && s.attrs["server.address"] != nil:
				t.Errorf("%s: server.address without server.port", s.name)
			}
		}
		for k, v := range s.attrs {
			if !strings.HasPrefix(k, "gen_ai.") && !strings.HasPrefix(k, "error.") {
				continue
			}
			r, ok := sc.registry[k]
			if !ok {
				t.Errorf("%s: %s is not in the conventions' registry", s.name, k)
				continue
			}
			if r.Deprecated.Kind != 0 {
				t.Errorf("%s: %s is deprecated", s.name, k)
			}
			typ, members := typeOf(r)
			if !typeMatches(typ, v) {
				t.Errorf("%s: %s = %#v, the registry says %s", s.name, k, v, typ)
			}
			if k == "gen_ai.operation.name" && !slices.Contains(members, v.(string)) {
				t.Errorf("%s: operation %q is not one of the registry's %v", s.name, v, members)
			}
		}
	}
	return checked
}

func typeMatches(typ string, v any) bool {
	switch typ {
	case "string", "enum":
		_, ok := v.(string)
		return ok
	case "int":
		_, ok := v.(int64)
		return ok
	case "double":
		_, ok := v.(float64)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string[]":
		l, ok := v.([]any)
		for _, x := range l {
			if _, s := x.(string); !s {
				return false
			}
		}
		return ok
	}
	return false
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// fromSDK is the SDK's spans as the check sees them.
func fromSDK(spans []tracetest.SpanStub) []gspan {
	var out []gspan
	for _, s := range spans {
		a := attrs(s)
		for k, v := range a {
			if l, ok := v.([]string); ok {
				var x []any
				for _, e := range l {
					x = append(x, e)
				}
				a[k] = x
			}
		}
		out = append(out, gspan{name: s.Name, kind: s.SpanKind.String(), attrs: a, failed: s.Status.Code.String() == "Error"})
	}
	return out
}

// fromCollector is the collector's spans as the check sees them.
func fromCollector(spans []otelcoltest.Span) []gspan {
	kinds := map[int]string{1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
	var out []gspan
	for _, s := range spans {
		out = append(out, gspan{name: s.Name, kind: kinds[s.Kind], attrs: s.Attrs, failed: s.StatusCode == 2})
	}
	return out
}

// failedCall is a run whose llm step made a model call that answered
// (and asked for a tool), then one that failed with err.
func failedCall(t *testing.T, id, provider, err string) *board.Board {
	t.Helper()
	fin := at(1000)
	src := strings.Replace(plan, "provider: openai", "provider: "+provider, 1)
	b := board.New(board.Run{ID: id, PlanPath: "plan.yaml", PlanSource: src, Status: board.StatusFailed,
		Error: "step ask: " + err, StartedAt: at(0), FinishedAt: &fin})
	now := at(100)
	b.SetClock(func() time.Time { return now })
	if _, e := b.Append(board.Entry{Section: agents.Section, Role: agents.RoleAssistant, Author: "coder", Label: "ask",
		Meta: map[string]any{"visit": 1, "call": 1}}); e != nil {
		t.Fatal(e)
	}
	addRec(t, b, "ask", 1, 1, agents.Request{Model: "gpt-4o", Messages: []agents.Message{{Role: agents.RoleUser, Content: "hi"}}},
		agents.Response{ToolCalls: []agents.ToolCall{{ID: "c1", Name: "board_read"}}, Model: "gpt-4o-2024",
			Usage: agents.Usage{InputTokens: 10, OutputTokens: 2, CacheReadInputTokens: 4}, FinishReason: "tool_calls"})
	rec(t, b, board.StepRecord{Label: "ask", Visit: 1, Type: "llm", Status: board.StatusFailed, StartedAt: at(10), FinishedAt: at(900),
		Error: err}, nil)
	return b
}

// TestGenAIConventions: every GenAI span of a run that succeeded, of one
// whose step failed, and of runs whose model call failed follows the
// conventions' own definitions; a failed model call is a failed chat
// span with the provider's error as error.type, under its invoke_agent
// span, which fails with the same error.type, as does the run.
func TestGenAIConventions(t *testing.T) {
	sc := loadSemconv(t)
	for _, tc := range []struct {
		name    string
		board   func(t *testing.T) *board.Board
		errType string // the failed chat span's error.type; "": none fails
	}{
		{"answered, a command failed", sample, ""},
		{"openai rate limit", func(t *testing.T) *board.Board {
			return failedCall(t, "01A", "openai", "agent coder: openai: 429 rate_limit_exceeded: Rate limit reached (after 2 retries)")
		}, "rate_limit_exceeded"},
		{"anthropic overloaded", func(t *testing.T) *board.Board {
			return failedCall(t, "01B", "anthropic", "agent coder: anthropic: 529 overloaded_error: Overloaded")
		}, "overloaded_error"},
		{"status only", func(t *testing.T) *board.Board {
			return failedCall(t, "01C", "openai", "agent coder: openai: 502: <html>bad gateway</html>")
		}, "502"},
		{"timeout", func(t *testing.T) *board.Board {
			return failedCall(t, "01D", "openai", "agent coder: openai (gpt-4o): no complete answer within 30s (the agent's timeout: agents.coder.timeout)")
		}, "timeout"},
		{"connection", func(t *testing.T) *board.Board {
			return failedCall(t, "01E", "openai", "agent coder: openai: Post \"http://127.0.0.1:1/v1\": dial tcp 127.0.0.1:1: connect: connection refused")
		}, "_OTHER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spans := export(t, tc.board(t), Options{})
			checked := sc.check(t, fromSDK(spans))
			for _, op := range []string{"invoke_workflow", "invoke_agent", "chat", "execute_tool"} {
				if checked[op] == 0 {
					t.Errorf("no %s span was checked", op)
				}
			}
			m := byName(t, spans)
			root := one(t, m, "invoke_workflow fix-it")
			if attrs(root)["error.type"] != "failed" {
				t.Errorf("the failed run's error.type = %v", attrs(root)["error.type"])
			}
			if tc.errType == "" {
				return
			}
			agent := one(t, m, "invoke_agent coder")
			var failed []tracetest.SpanStub
			for _, c := range m["chat gpt-4o"] {
				if c.Status.Code.String() == "Error" {
					failed = append(failed, c)
				}
			}
			if len(m["chat gpt-4o"]) != 2 || len(failed) != 1 {
				t.Fatalf("want 2 chat spans, 1 failed; got %d, %d failed", len(m["chat gpt-4o"]), len(failed))
			}
			f := failed[0]
			a := attrs(f)
			if a["error.type"] != tc.errType || a["runner.call"] != int64(2) || f.Parent.SpanID() != agent.SpanContext.SpanID() {
				t.Errorf("failed chat: error.type %v call %v (want %s, 2, under the agent's span)", a["error.type"], a["runner.call"], tc.errType)
			}
			if !f.StartTime.Equal(at(100)) || !f.EndTime.Equal(at(900)) {
				t.Errorf("failed chat %v..%v, want from the answered call's end to the step's", f.StartTime.Sub(t0), f.EndTime.Sub(t0))
			}
			if aa := attrs(agent); aa["error.type"] != tc.errType || agent.Status.Code.String() != "Error" ||
				aa["gen_ai.usage.input_tokens"] != int64(10) || aa["gen_ai.usage.cache_read.input_tokens"] != int64(4) {
				t.Errorf("the agent's span: %v %v", agent.Status, aa)
			}
		})
	}
}

// TestGenAIConventionsThroughCollector: the same holds of what a real
// collector decoded from runner's OTLP export.
func TestGenAIConventionsThroughCollector(t *testing.T) {
	sc := loadSemconv(t)
	col := otelcoltest.Start(t)
	for _, b := range []*board.Board{sample(t), failedCall(t, "01F", "anthropic", "agent coder: anthropic: 529 overloaded_error: Overloaded")} {
		n, err := Export(context.Background(), b, Config{Endpoint: col.Endpoint + "/v1/traces", Timeout: 20 * time.Second,
			Options: Options{Types: steps.Registry()}})
		if err != nil {
			t.Fatal(err)
		}
		got := fromCollector(col.Spans(t, b.Run().ID, n))
		checked := sc.check(t, got)
		if checked["chat"] == 0 || checked["invoke_agent"] == 0 || checked["invoke_workflow"] == 0 {
			t.Errorf("run %s: checked %v", b.Run().ID, checked)
		}
	}
}

// TestModelCallError: what a failed call's error says becomes a short
// error.type; an error that is not a model call's is not taken for one.
func TestModelCallError(t *testing.T) {
	for _, tc := range []struct {
		msg, agent, provider, errType string
		ok                            bool
	}{
		{"agent coder: openai: 429 rate_limit_exceeded: slow down (after 3 retries)", "coder", "openai", "rate_limit_exceeded", true},
		{"agent a: anthropic: 400 invalid_request_error: bad", "a", "anthropic", "invalid_request_error", true},
		{"agent a: openai: 500", "a", "openai", "500", true},
		{"agent a: openai: 503 (after 2 retries)", "a", "openai", "503", true},
		{"agent a: openai (gpt-4o): nothing more of the stream for 30s", "a", "openai", "timeout", true},
		{"agent a: openai: context deadline exceeded", "a", "openai", "timeout", true},
		{"agent a: openai: context canceled", "a", "openai", "canceled", true},
		{"agent a: openai: 429 x: y; its fallbacks failed too: agent b: anthropic: 500", "a", "openai", "x", true},
		{"step x: agent a: script: no answer left for step x", "a", "script", "_OTHER", true},
		{"the answer is not JSON: invalid character", "", "", "", false},
		{"prompt: no such variable", "", "", "", false},
		{"limits.max_tokens 10 reached: 12 tokens used", "", "", "", false},
	} {
		agent, provider, errType, ok := modelCallError(tc.msg)
		if agent != tc.agent || provider != tc.provider || errType != tc.errType || ok != tc.ok {
			t.Errorf("%q: %q %q %q %v, want %q %q %q %v", tc.msg, agent, provider, errType, ok, tc.agent, tc.provider, tc.errType, tc.ok)
		}
	}
}

// TestDocsListEveryAttribute: docs/tracing.md's list of attributes is
// the code's: every attribute a span of the test runs carries is listed
// there, and every attribute listed is one the code sets.
func TestDocsListEveryAttribute(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "tracing.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start, end := strings.Index(doc, "## The spans"), strings.Index(doc, "## Runs on Temporal")
	if start < 0 || end < start {
		t.Fatal("docs/tracing.md has no section The spans before Runs on Temporal")
	}
	section := doc[start:end]
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`((?:gen_ai|runner|server|error)\\.[a-z_.A-Z]+)`").FindAllStringSubmatch(section, -1) {
		listed[m[1]] = true
	}
	var src strings.Builder
	for _, f := range []string{"spans.go", "genai.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	for k := range listed {
		if strings.Contains(k, "FIELD") {
			continue // a pattern: runner.result.FIELD
		}
		if !strings.Contains(src.String(), `"`+k+`"`) && !strings.HasPrefix(k, "runner.result.") {
			t.Errorf("docs/tracing.md lists %s, which no span carries", k)
		}
	}
	var boards []*board.Board
	boards = append(boards, sample(t), failedCall(t, "01G", "openai", "agent coder: openai: 500"))
	for _, b := range boards {
		for _, content := range []bool{false, true} {
			for _, s := range export(t, b, Options{Content: content}) {
				for _, kv := range s.Attributes {
					k := string(kv.Key)
					if strings.HasPrefix(k, "runner.result.") {
						continue // the step's result, listed as runner.result.FIELD
					}
					if !listed[k] && !strings.Contains(doc, "`"+k+"`") {
						t.Errorf("span %s carries %s, which docs/tracing.md does not list", s.Name, k)
					}
				}
			}
		}
	}
}

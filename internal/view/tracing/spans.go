// Package tracing turns a run's blackboard into an OpenTelemetry trace:
// one span for the run, one per step visit, one per model call and per
// tool call, named and attributed as the OpenTelemetry GenAI semantic
// conventions say (invoke_workflow, invoke_agent, chat, execute_tool).
//
// The trace is made from the record, not from the run as it happens: a
// board holds every step visit's start and end, every model call and the
// clock of the entries it wrote. So one piece of code serves a live run
// (exported when it ends), `runner trace` on a saved run (long after it
// ended, with its recorded times) and a replay (whose board carries the
// recorded clock). And a run pays nothing for tracing while it runs: no
// span is made before the run is over, and none at all when tracing is
// off.
//
// Span and trace IDs are derived from the run's ID, so exporting a run
// twice (live, then `runner trace`) gives the same IDs, which a backend
// folds into one trace instead of two.
//
// A step visit's span is named by the kinds of result its type has
// (engine.Caps.Shows: a model's answer is the agent's invocation), not by
// the type's name. It imports board, agents, plans, engine (for the types'
// Caps) and traceconf; nothing that runs a plan.
package tracing

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Options say what goes into the spans.
type Options struct {
	// Mask hides the run's secrets in every string attribute and status
	// message; nil: none known.
	Mask func(string) string
	// Content puts the model calls' messages on their spans
	// (gen_ai.system_instructions, gen_ai.input.messages,
	// gen_ai.output.messages) and the tool calls' arguments and results
	// on theirs. Off unless OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
	// is true: the conventions keep content out by default.
	Content bool
	// Types say what each step's type shows (engine.Caps.Shows); nil: no
	// step is more than a step.
	Types *engine.Registry
}

// Attribute keys of our own (the conventions have none for these).
const (
	keyRunID     = "runner.run.id"
	keyRunStatus = "runner.run.status"
)

// builder emits one board's spans.
type builder struct {
	tracer trace.Tracer
	o      Options
	runID  string
	trace  trace.TraceID
}

// idKey carries the span ID the next span must have to the ID generator.
type idKey struct{}

// spanID is the ID of the span key names within run runID.
func spanID(runID, key string) trace.SpanID {
	h := sha256.Sum256([]byte("runner span\x00" + runID + "\x00" + key))
	var id trace.SpanID
	copy(id[:], h[:8])
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}

// idSeed is what a run's trace and span IDs are derived from: its ID,
// so that tracing a run twice (live, then `runner trace`) gives the same
// IDs. A replay keeps the recorded run's ID on its board, so its seed
// also names the recording (run.ReplayOf): its trace is its own, not
// merged by a backend into the recorded run's.
func idSeed(run board.Run) string {
	if run.ReplayOf != "" {
		return run.ID + "\x00replay of\x00" + run.ReplayOf
	}
	return run.ID
}

// traceID is the trace of run runID.
func traceID(runID string) trace.TraceID {
	h := sha256.Sum256([]byte("runner trace\x00" + runID))
	var id trace.TraceID
	copy(id[:], h[:16])
	if !id.IsValid() {
		id[15] = 1
	}
	return id
}

// ids is the SDK's ID generator for our spans: the IDs derived from the
// run (see spanID), carried in the context of each Start.
type ids struct{ trace trace.TraceID }

func (g ids) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	return g.trace, g.NewSpanID(ctx, g.trace)
}

func (g ids) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	id, _ := ctx.Value(idKey{}).(trace.SpanID)
	return id
}

func (b *builder) mask(s string) string {
	if b.o.Mask == nil {
		return s
	}
	return b.o.Mask(s)
}

// str is a masked string attribute.
func (b *builder) str(k, v string) attribute.KeyValue {
	return attribute.String(k, b.mask(v))
}

// span is one span to make: its place in the tree, times and attributes.
type span struct {
	key, parent string
	name        string
	kind        trace.SpanKind
	start, end  time.Time
	attrs       []attribute.KeyValue
	err         string // "" unless the span failed
}

// spans lists the board's spans, parents before their children.
func (b *builder) spans(bd *board.Board) []span {
	run := bd.Run()
	steps := bd.Steps()
	recs := bd.Recordings()
	pi := readPlan(run)
	// Each visit's model calls: how many, and their tokens summed for its
	// invoke_agent span.
	calls := map[string]int{}
	usage := map[string]agents.Usage{}
	for _, r := range recs {
		if !agents.IsModelCall(r) {
			continue
		}
		var resp agents.Response
		_ = json.Unmarshal(r.Response, &resp) // an unreadable answer counts no tokens
		vk := visitKey(r.Label, r.Visit)
		calls[vk] = max(calls[vk], r.Call)
		usage[vk] = usage[vk].Add(resp.Usage)
	}

	runEnd := run.StartedAt
	if run.FinishedAt != nil {
		runEnd = *run.FinishedAt
	}
	for _, s := range steps {
		if s.FinishedAt.After(runEnd) {
			runEnd = s.FinishedAt
		}
	}
	name := planName(run)
	root := span{key: "run", name: "invoke_workflow " + name, kind: trace.SpanKindInternal,
		start: run.StartedAt, end: runEnd, attrs: []attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "invoke_workflow"),
			b.str("gen_ai.workflow.name", name),
			attribute.String(keyRunID, run.ID),
			attribute.String(keyRunStatus, run.Status),
			b.str("runner.plan.path", run.PlanPath),
			attribute.String("runner.plan.sha256", run.PlanSHA256),
		}}
	if run.ReplayOf != "" {
		root.attrs = append(root.attrs, b.str("runner.replay_of", run.ReplayOf))
	}
	if run.Status == board.StatusFailed || run.Status == board.StatusInterrupted {
		root.err = run.Error
		if root.err == "" {
			root.err = run.Status
		}
		root.attrs = append(root.attrs, attribute.String("error.type", run.Status))
	}
	out := []span{root}

	// Steps, a group's (or for_each's) children under the visit of the
	// group that was running when they started.
	order := make([]int, len(steps))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, c := steps[order[i]], steps[order[j]]
		if !a.StartedAt.Equal(c.StartedAt) {
			return a.StartedAt.Before(c.StartedAt)
		}
		return a.FinishedAt.After(c.FinishedAt) // a group starts with its first child and ends after it
	})
	stepKey := map[string]span{}
	for _, i := range order {
		s := steps[i]
		vk := visitKey(s.Label, s.Visit)
		sp := b.stepSpan(s, pi, usage[vk], calls[vk] > 0)
		sp.parent = "run"
		if s.Parent != "" {
			if p, ok := enclosing(steps, s); ok {
				sp.parent = visitKey(p.Label, p.Visit)
			}
		}
		stepKey[sp.key] = sp
		out = append(out, sp)
	}

	// Model calls and the tool calls they asked for, under their visit.
	answers, tools := llmEntries(bd)
	sort.SliceStable(recs, func(i, j int) bool {
		if recs[i].Label != recs[j].Label {
			return recs[i].Label < recs[j].Label
		}
		if recs[i].Visit != recs[j].Visit {
			return recs[i].Visit < recs[j].Visit
		}
		return recs[i].Call < recs[j].Call
	})
	prevEnd := map[string]time.Time{}
	for _, r := range recs {
		if !agents.IsModelCall(r) {
			continue
		}
		vk := visitKey(r.Label, r.Visit)
		parent, ok := stepKey[vk]
		if !ok { // the visit never finished (a killed run): under the run
			parent = root
			parent.key = "run"
		}
		start, end := parent.start, parent.end
		if t, ok := prevEnd[vk]; ok {
			start = t
		}
		if t, ok := answers[callKey{r.Label, r.Visit, r.Call}]; ok {
			end = t
		}
		if end.Before(start) {
			start = end
		}
		prevEnd[vk] = end
		out = append(out, b.callSpans(r, parent.key, start, end, pi, tools)...)
	}

	// A model call that failed left no recording, only its step's error:
	// it is a chat span of its own, failed, after the visit's answered
	// calls, so that the failures are where GenAI views look for them.
	for _, s := range steps {
		if s.Status != board.StatusFailed || !b.o.Types.Caps(s.Type).Shows.Has(engine.ShowsModel) {
			continue
		}
		agent, _, errType, ok := modelCallError(s.Error)
		if !ok {
			continue
		}
		vk := visitKey(s.Label, s.Visit)
		start := s.StartedAt
		if t, ok := prevEnd[vk]; ok && t.Before(s.FinishedAt) {
			start = t
		}
		out = append(out, b.failedCallSpan(s, vk, calls[vk]+1, agent, pi.agents[agent], errType, start))
	}
	return out
}

// failedCallSpan is the chat span of a visit's model call that failed.
func (b *builder) failedCallSpan(s board.StepRecord, parent string, call int, agent string, ai agentInfo, errType string, start time.Time) span {
	sp := span{key: fmt.Sprintf("call %s#%d/%d", s.Label, s.Visit, call), parent: parent,
		name: strings.TrimSpace("chat " + ai.model), kind: trace.SpanKindClient, start: start, end: s.FinishedAt,
		err: firstLine(s.Error)}
	sp.attrs = []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("error.type", errType),
		attribute.Int("runner.call", call),
	}
	if ai.provider != "" {
		sp.attrs = append(sp.attrs, attribute.String("gen_ai.provider.name", ai.provider))
	}
	if agent != "" {
		sp.attrs = append(sp.attrs, b.str("gen_ai.agent.name", agent))
	}
	if ai.model != "" {
		sp.attrs = append(sp.attrs, b.str("gen_ai.request.model", ai.model))
	}
	sp.attrs = append(sp.attrs, ai.serverAttrs()...)
	return sp
}

var itemLabel = regexp.MustCompile(`\[(\d+)\]$`)

// stepSpan is a step visit's span: invoke_agent for a step whose output
// is an agent's answer (engine.ShowsModel: llm; the conventions' agent
// invocation, with the tokens of its model calls, u, when it made some),
// the step's label otherwise.
func (b *builder) stepSpan(s board.StepRecord, pi planInfo, u agents.Usage, called bool) span {
	sp := span{key: visitKey(s.Label, s.Visit), name: "step " + s.Label, kind: trace.SpanKindInternal,
		start: s.StartedAt, end: s.FinishedAt}
	var res map[string]any
	_ = json.Unmarshal(s.Result, &res) // a step without a result has no result attributes
	errType := s.Status
	if b.o.Types.Caps(s.Type).Shows.Has(engine.ShowsModel) {
		if agent := pi.agentOf(s, res); agent != "" {
			ai := pi.agents[agent]
			sp.name = "invoke_agent " + agent
			sp.attrs = append(sp.attrs, attribute.String("gen_ai.operation.name", "invoke_agent"), b.str("gen_ai.agent.name", agent))
			if ai.provider != "" {
				sp.attrs = append(sp.attrs, attribute.String("gen_ai.provider.name", ai.provider))
			}
			if ai.model != "" {
				sp.attrs = append(sp.attrs, b.str("gen_ai.request.model", ai.model))
			}
			if m, _ := res["model"].(string); m != "" {
				sp.attrs = append(sp.attrs, b.str("gen_ai.response.model", m))
			}
			if fr, _ := res["finish_reason"].(string); fr != "" {
				sp.attrs = append(sp.attrs, attribute.StringSlice("gen_ai.response.finish_reasons", []string{fr}))
			}
			if called {
				sp.attrs = append(sp.attrs, usageAttrs(u)...)
			}
		}
		if _, _, t, ok := modelCallError(s.Error); ok {
			errType = t
		}
	}
	sp.attrs = append(sp.attrs,
		b.str("runner.step.label", s.Label),
		attribute.Int("runner.step.visit", s.Visit),
		attribute.String("runner.step.type", s.Type),
		attribute.String("runner.step.status", s.Status))
	if m := itemLabel.FindStringSubmatch(s.Label); m != nil {
		n, _ := strconv.Atoi(m[1])
		sp.attrs = append(sp.attrs, attribute.Int("runner.step.item", n))
	}
	if s.Parent != "" {
		sp.attrs = append(sp.attrs, b.str("runner.step.parent", s.Parent))
	}
	if s.Attempts > 0 {
		sp.attrs = append(sp.attrs, attribute.Int("runner.step.attempts", s.Attempts))
	}
	if len(s.Delays) > 0 {
		sp.attrs = append(sp.attrs, attribute.Int64Slice("runner.step.retry_delays_ms", s.Delays))
	}
	if s.Goto != "" {
		sp.attrs = append(sp.attrs, b.str("runner.step.goto", s.Goto))
	}
	if s.Error != "" || s.Status == "failed" {
		sp.err = s.Error
		if sp.err == "" {
			sp.err = s.Status
		}
		sp.attrs = append(sp.attrs, attribute.String("error.type", errType))
	}
	sp.attrs = append(sp.attrs, b.resultAttrs("runner.result", res, 0)...)
	sp.attrs = append(sp.attrs, diffStats(res)...)
	return sp
}

// skipped are result fields that hold text a step produced or read (its
// output, a prompt, a board value): content, not a measurement, and
// possibly large.
var skipped = map[string]bool{"stdout": true, "stderr": true, "output": true, "text": true, "prompt": true,
	"summary": true, "content": true, "value": true, "answer": true, "messages": true, "failures": true,
	"build_errors": true, "hunks": true, "inputs": true, "transcript": true, "command": true}

// resultAttrs flattens a step's result into attributes: numbers and
// booleans at any depth (exit codes, test counts, tokens, cost), short
// strings (an outcome, a model), a list's length as NAME.count. Text the
// step produced is left out (see skipped).
func (b *builder) resultAttrs(prefix string, m map[string]any, depth int) []attribute.KeyValue {
	if depth > 3 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []attribute.KeyValue
	for _, k := range keys {
		if skipped[k] {
			continue
		}
		name := prefix + "." + k
		switch v := m[k].(type) {
		case bool:
			out = append(out, attribute.Bool(name, v))
		case float64:
			if v == float64(int64(v)) {
				out = append(out, attribute.Int64(name, int64(v)))
			} else {
				out = append(out, attribute.Float64(name, v))
			}
		case string:
			if v != "" && len(v) <= 200 {
				out = append(out, b.str(name, v))
			}
		case []any:
			out = append(out, attribute.Int(name+".count", len(v)))
		case map[string]any:
			out = append(out, b.resultAttrs(name, v, depth+1)...)
		}
	}
	return out
}

// diffStats sums an apply_diff result's files: how many, lines added and
// removed.
func diffStats(res map[string]any) []attribute.KeyValue {
	files, ok := res["files"].([]any)
	if !ok {
		return nil
	}
	var added, removed int64
	n := 0
	for _, f := range files {
		m, ok := f.(map[string]any)
		if !ok {
			continue
		}
		a, okA := m["added"].(float64)
		r, okR := m["removed"].(float64)
		if !okA && !okR {
			continue
		}
		n++
		added += int64(a)
		removed += int64(r)
	}
	if n == 0 {
		return nil
	}
	return []attribute.KeyValue{attribute.Int("runner.diff.files", n),
		attribute.Int64("runner.diff.lines_added", added), attribute.Int64("runner.diff.lines_removed", removed)}
}

// enclosing is the visit of s's group that was running when s ran: the
// one holding s's times whole (the latest to start, for nested visits),
// else the one s overlaps most, or is nearest to. A run on Temporal
// records a group's times by the workflow's clock and its children's by
// the workers' (and a resumed run's by two processes' clocks), so a
// child can stick out of its group by a few milliseconds: it still
// belongs under it, not at the trace's root.
func enclosing(steps []board.StepRecord, s board.StepRecord) (board.StepRecord, bool) {
	var best, near board.StepRecord
	found, any := false, false
	var nearOverlap time.Duration
	for _, p := range steps {
		if p.Label != s.Parent {
			continue
		}
		// How long p and s ran together (negative: the gap between them).
		end, start := p.FinishedAt, p.StartedAt
		if s.FinishedAt.Before(end) {
			end = s.FinishedAt
		}
		if s.StartedAt.After(start) {
			start = s.StartedAt
		}
		overlap := end.Sub(start)
		if !any || overlap > nearOverlap {
			near, nearOverlap, any = p, overlap, true
		}
		if p.StartedAt.After(s.StartedAt) || p.FinishedAt.Before(s.FinishedAt) {
			continue
		}
		if !found || p.StartedAt.After(best.StartedAt) {
			best, found = p, true
		}
	}
	if !found {
		return near, any
	}
	return best, found
}

func visitKey(label string, visit int) string { return fmt.Sprintf("step %s#%d", label, visit) }

type callKey struct {
	label       string
	visit, call int
}

// toolResult is a tool call's answer as the board holds it.
type toolResult struct {
	content string
	isError bool
}

// llmEntries reads the board's conversation entries: when each model
// call's answer was written (the end of the call), and each tool call's
// result by its call ID.
func llmEntries(bd *board.Board) (map[callKey]time.Time, map[string]toolResult) {
	answers := map[callKey]time.Time{}
	tools := map[string]toolResult{}
	for _, e := range bd.Query(board.Filter{Section: agents.Section}) {
		switch e.Role {
		case agents.RoleAssistant:
			visit, ok1 := e.Meta["visit"].(float64)
			call, ok2 := e.Meta["call"].(float64)
			if !ok1 || !ok2 {
				visitI, okI := e.Meta["visit"].(int)
				callI, okC := e.Meta["call"].(int)
				if !okI || !okC {
					continue
				}
				visit, call = float64(visitI), float64(callI)
			}
			k := callKey{e.Label, int(visit), int(call)}
			if t, ok := answers[k]; !ok || e.TS.After(t) {
				answers[k] = e.TS
			}
		case agents.RoleTool:
			id, _ := e.Meta["tool_call_id"].(string)
			if id == "" {
				continue
			}
			content, _ := e.Content.(string)
			isErr, _ := e.Meta["is_error"].(bool)
			tools[id] = toolResult{content: content, isError: isErr}
		}
	}
	return answers, tools
}

// callSpans are a model call's chat span and the execute_tool spans of
// the tool calls its answer made. Board tools run in runner's process in
// microseconds between two calls; their spans start and end when the
// answer that asked for them came.
func (b *builder) callSpans(r board.Recording, parent string, start, end time.Time, pi planInfo, tools map[string]toolResult) []span {
	var req agents.Request
	_ = json.Unmarshal(r.Request, &req) // kept without its request: the response still tells the model
	own := r.Kind == agents.KindLLM
	if !own {
		// A coding agent's exchange: the CLI's request in the provider's
		// shape, its answer as the CLI got it; the model, tokens and cost
		// are what the span can say.
		req = agents.Request{Model: req.Model}
	}
	var resp agents.Response
	_ = json.Unmarshal(r.Response, &resp)
	model := req.Model
	if model == "" {
		model = resp.Model
	}
	key := fmt.Sprintf("call %s#%d/%d", r.Label, r.Visit, r.Call)
	sp := span{key: key, parent: parent, name: strings.TrimSpace("chat " + model), kind: trace.SpanKindClient,
		start: start, end: end}
	ai := pi.agents[r.Agent]
	a := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.Float64("runner.cost_usd", resp.CostUSD),
		attribute.Int("runner.call", r.Call),
	}
	a = append(a, usageAttrs(resp.Usage)...)
	if ai.provider != "" {
		a = append(a, attribute.String("gen_ai.provider.name", ai.provider))
	}
	a = append(a, ai.serverAttrs()...)
	if r.Agent != "" {
		a = append(a, b.str("gen_ai.agent.name", r.Agent))
	}
	if req.Model != "" {
		a = append(a, b.str("gen_ai.request.model", req.Model))
	}
	if resp.Model != "" {
		a = append(a, b.str("gen_ai.response.model", resp.Model))
	}
	if resp.FinishReason != "" {
		a = append(a, attribute.StringSlice("gen_ai.response.finish_reasons", []string{resp.FinishReason}))
	}
	if req.Temperature != nil {
		a = append(a, attribute.Float64("gen_ai.request.temperature", *req.Temperature))
	}
	if req.MaxTokens > 0 {
		a = append(a, attribute.Int("gen_ai.request.max_tokens", req.MaxTokens))
	}
	if req.Seed != nil {
		a = append(a, attribute.Int("gen_ai.request.seed", *req.Seed))
	}
	if resp.Retries > 0 {
		a = append(a, attribute.Int("runner.retries", resp.Retries))
	}
	if resp.Reused {
		a = append(a, attribute.Bool("runner.reused", true))
	}
	if len(resp.FailedOver) > 0 {
		a = append(a, b.str("runner.fallback_for", resp.FailedOver[0].Agent))
	}
	if b.o.Content && own {
		if req.System != "" {
			a = append(a, b.str("gen_ai.system_instructions", jsonString([]any{textPart(req.System)})))
		}
		if r.Request != nil {
			a = append(a, b.str("gen_ai.input.messages", jsonString(inputMessages(req.Messages))))
		}
		a = append(a, b.str("gen_ai.output.messages", jsonString([]any{map[string]any{
			"role": "assistant", "parts": parts(resp.Text, resp.ToolCalls), "finish_reason": resp.FinishReason}})))
	}
	sp.attrs = a
	out := []span{sp}
	for i, tc := range resp.ToolCalls {
		t := span{key: fmt.Sprintf("%s/tool %d", key, i), parent: parent, name: "execute_tool " + tc.Name,
			kind: trace.SpanKindInternal, start: end, end: end, attrs: []attribute.KeyValue{
				attribute.String("gen_ai.operation.name", "execute_tool"),
				b.str("gen_ai.tool.name", tc.Name),
				b.str("gen_ai.tool.call.id", tc.ID),
				attribute.String("gen_ai.tool.type", "function"),
			}}
		res, ok := tools[tc.ID]
		if ok && res.isError {
			t.err = firstLine(res.content)
			t.attrs = append(t.attrs, attribute.String("error.type", errToolError))
		}
		if b.o.Content {
			t.attrs = append(t.attrs, b.str("gen_ai.tool.call.arguments", string(tc.Args)))
			if ok {
				t.attrs = append(t.attrs, b.str("gen_ai.tool.call.result", res.content))
			}
		}
		out = append(out, t)
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func textPart(s string) map[string]any { return map[string]any{"type": "text", "content": s} }

// parts are a message's parts as the conventions write them.
func parts(text string, calls []agents.ToolCall) []any {
	var ps []any
	if text != "" {
		ps = append(ps, textPart(text))
	}
	for _, c := range calls {
		ps = append(ps, map[string]any{"type": "tool_call", "id": c.ID, "name": c.Name, "arguments": c.Args})
	}
	return ps
}

// inputMessages are a request's messages in the conventions' form.
func inputMessages(ms []agents.Message) []any {
	out := []any{}
	for _, m := range ms {
		var ps []any
		if m.Role == agents.RoleTool {
			ps = []any{map[string]any{"type": "tool_call_response", "id": m.ToolCallID, "response": m.Content}}
		} else {
			ps = parts(m.Content, m.ToolCalls)
		}
		out = append(out, map[string]any{"role": m.Role, "parts": ps})
	}
	return out
}

func jsonString(v any) string {
	out, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(out)
}

// planName is the run's plan's name, or its file's name.
func planName(run board.Run) string {
	if p, err := plans.ParseLeanText(run.PlanPath, run.PlanSource); err == nil && p.Name != "" {
		return p.Name
	}
	if run.PlanPath != "" {
		return run.PlanPath
	}
	return "plan"
}

// emit makes the spans through tracer, with their recorded times. A
// span's parent is made before it, whatever their order in spans: a
// child whose recorded start is before its group's (clocks of two
// processes, on Temporal) still gets its parent's context.
func (b *builder) emit(spans []span) {
	ctxs := map[string]context.Context{}
	byKey := map[string]int{}
	for i, s := range spans {
		byKey[s.key] = i
	}
	done := make([]bool, len(spans))
	var start func(i int)
	start = func(i int) {
		if done[i] {
			return
		}
		done[i] = true
		s := spans[i]
		if j, ok := byKey[s.parent]; ok {
			start(j)
		}
		parent, ok := ctxs[s.parent]
		if !ok {
			parent = context.Background()
		}
		ctx := context.WithValue(parent, idKey{}, spanID(b.runID, s.key))
		ctx, sp := b.tracer.Start(ctx, b.mask(s.name), trace.WithTimestamp(s.start), trace.WithSpanKind(s.kind),
			trace.WithAttributes(s.attrs...))
		if s.err != "" {
			sp.SetStatus(codes.Error, b.mask(s.err))
		}
		end := s.end
		if end.Before(s.start) {
			end = s.start
		}
		sp.End(trace.WithTimestamp(end))
		ctxs[s.key] = ctx
	}
	for i := range spans {
		start(i)
	}
}

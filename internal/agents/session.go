package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/agents/mcp"
	"github.com/planrunner/runner/internal/bigjson"
	"github.com/planrunner/runner/internal/board"
	"github.com/rs/zerolog"
)

// Section is the board section a conversation's entries go to.
const Section = "llm"

// Session is one step visit's conversation with one agent. Each Send is a
// model call: the new messages and the answer go on the board as entries
// (section llm, author the agent, label the step), and the exchange as a
// board.Recording. A Session is used by one goroutine at a time.
type Session struct {
	set   *Set
	agent *Agent
	board *board.Board
	label string
	visit int

	// Log receives the session's retries and call summaries; it starts as
	// the Set's logger with the agent, step and visit as fields.
	Log zerolog.Logger

	// System is the system prompt; it starts as the agent's.
	System string
	// Tools are offered to the model on every call.
	Tools []Tool
	// Schema, when set, is the JSON Schema the answer must match.
	Schema json.RawMessage
	// Messages is the conversation so far, answers included.
	Messages []Message
	// Now reads the clock for the board tools' TTL checks; the llm step
	// gives its visit's recorded clock (engine.StepContext.Now). nil: the
	// clock.
	Now func() time.Time
	// Read reads a key for the board tools; the llm step gives its visit's
	// recorded reads (engine.StepContext.Read). nil: the board directly.
	Read func(author, key string) (board.Entry, bool, error)

	// Dir is where the agent's stdio MCP servers start (the run's
	// workdir); "": runner's working directory.
	Dir string
	// Elicit answers what an MCP server asks a person during one of
	// the session's tool calls; nil: nobody can, and the server is told
	// cancel. The llm step makes it an input a person answers.
	Elicit mcp.ElicitFunc
	// Scope bounds the board keys of a spawned agent's tools (spawn.go);
	// nil: the agent's own patterns only.
	Scope *Scope

	// Batch, when set, takes the session's first model call into a
	// provider batch (batch.go): it returns the batch's answer, nil to
	// make the call as usual, or an error that fails the call. Leave is
	// called instead when that call is answered otherwise (a recording).
	Batch      func(ctx context.Context, c *BatchCall) (*Response, error)
	BatchLeave func()

	posted  int // Messages already on the board
	retries int // HTTP retries of the call under way, fallbacks included
	// MCP: the tools offered (by the model's name for them), the number
	// of the last MCP exchange within the visit, the servers of scope
	// step, by name, and those to end with the session.
	mcpTools    map[string]*mcpTool
	planTools   map[string]*planTool // tools the plan defines (plantools.go)
	mcpCalls    int
	mcpNumbered bool // mcpCalls starts after the visit's recorded exchanges
	stepConns   map[string]*mcp.Conn
	ownConns    []*mcp.Conn
	call        int // number of the last call within the visit
	stats       Stats
	statsMu     sync.Mutex // stats and wrote, which sub-agents add to
	wrote       []string   // keys the board tools wrote (spawn.go)
	// memory: which leading Messages are the agent's memory (Remember);
	// memHeld: the agent whose memory the session holds until Close.
	memory  *MemoryRef
	memHeld string
	// own: the visit's recorded calls and exchanges, answered again when
	// it goes on after a person allowed or refused a tool call (Reenter).
	own map[callKey]board.Recording
}

// Stats sum up a session's calls, for the step's result.
type Stats struct {
	Calls        int
	Retries      int
	Usage        Usage
	CostUSD      float64
	Agent        string // the agent that gave the last answer (a fallback, if one took over)
	Fallbacks    int    // calls a fallback agent answered
	Model        string // as the last answer named it
	FinishReason string // of the last answer
}

// Session starts a conversation of step label (at visit) with agent name.
func (s *Set) Session(b *board.Board, label string, visit int, name string) (*Session, error) {
	a, ok := s.agents[name]
	if !ok {
		return nil, s.unknownAgent(name)
	}
	return &Session{set: s, agent: a, board: b, label: label, visit: visit, System: a.System,
		Log: s.log.With().Str("agent", name).Str("step", label).Int("visit", visit).Logger()}, nil
}

// Agent is the agent the session talks to.
func (ss *Session) Agent() *Agent { return ss.agent }

// Stats returns the session's totals so far.
func (ss *Session) Stats() Stats { return ss.stats }

// Send adds msgs to the conversation and asks the model for the next turn,
// which it appends to Messages and returns. On failure the conversation is
// left as it was.
func (ss *Session) Send(ctx context.Context, msgs ...Message) (*Response, error) {
	before := len(ss.Messages)
	ss.Messages = append(ss.Messages, msgs...)
	resp, err := ss.send(ctx)
	if err != nil {
		ss.Messages = ss.Messages[:before]
		if ss.posted > before {
			ss.posted = before
		}
		return nil, err
	}
	return resp, nil
}

// request is the next call to agent a: the session's conversation with
// a's model and parameters. A fallback agent brings its own system prompt
// unless the step set one.
func (ss *Session) request(a *Agent) *Request {
	spec := a.Spec
	system := ss.System
	if a != ss.agent && ss.System == ss.agent.System {
		system = a.System
	}
	return &Request{Model: a.Model, System: system, Messages: ss.Messages, Tools: ss.Tools,
		Schema: ss.Schema, Temperature: spec.Temperature, MaxTokens: spec.MaxTokens, Seed: spec.Seed, Memory: ss.memory,
		ReasoningEffort: spec.ReasoningEffort, Thinking: spec.Thinking}
}

// send makes the next call: to the session's agent, or, when that fails
// with a provider error its retries did not cure, to its fallbacks in
// order. The first fallback that answers takes over the conversation.
func (ss *Session) send(ctx context.Context) (*Response, error) {
	first := ss.agent
	ss.retries = 0
	resp, firstErr := ss.callAgent(ctx, first, nil)
	if firstErr == nil {
		return resp, nil
	}
	var fell *fellBack
	var failed []Failure
	if !errors.As(firstErr, &fell) {
		if len(first.Spec.Fallback) == 0 || !fallbackWorthy(ctx, first, firstErr) {
			return nil, firstErr
		}
		failed = append(failed, Failure{Agent: first.Name, Error: firstErr.Error()})
	}
	err := firstErr
	for _, name := range first.Spec.Fallback {
		next, ok := ss.set.agents[name]
		if !ok {
			continue // plans checks fallbacks; a hand-built plan may not
		}
		if fell != nil && name != fell.agent {
			continue // the recording says which fallback answered
		}
		fell = nil
		if len(failed) > 0 {
			ss.Log.Warn().Str("failed", failed[len(failed)-1].Agent).Str("error", failed[len(failed)-1].Error).
				Str("fallback", next.Name).Msg("model call failed; a fallback agent takes over")
		}
		resp, err = ss.callAgent(ctx, next, failed)
		if err == nil {
			ss.stats.Fallbacks++
			if ss.System == ss.agent.System {
				ss.System = next.System
			}
			ss.agent = next
			ss.Log = ss.Log.With().Str("answered_by", next.Name).Logger()
			return resp, nil
		}
		if !fallbackWorthy(ctx, next, err) {
			return nil, err
		}
		failed = append(failed, Failure{Agent: next.Name, Error: err.Error()})
	}
	if len(failed) > 1 {
		var also []string
		for _, f := range failed[1:] {
			also = append(also, f.Error)
		}
		return nil, fmt.Errorf("%w; its fallbacks failed too: %s", firstErr, strings.Join(also, "; "))
	}
	return nil, err
}

// Failure is a call that failed before a fallback agent answered it, kept
// in the answer (Response.FailedOver) so the recording says so.
type Failure struct {
	Agent string `json:"agent"`
	Error string `json:"error"`
}

// fellBack is what replay finds when the recorded call was answered by a
// fallback of the session's agent: the provider failed then.
type fellBack struct{ agent string }

func (f *fellBack) Error() string { return "the recording has agent " + f.agent + " answer" }

// fallbackWorthy reports whether a failed call should go to a fallback:
// the provider is down or overloaded (5xx, 529, 429, 408 after retries),
// does not know the model (404, model_not_found), or did not answer in
// time or at all. A cancelled step, a spent budget, a diverged replay, a
// request the provider refused (400, 401, 403) or a script that ran out
// of answers are not: another agent would not fix them.
func fallbackWorthy(ctx context.Context, a *Agent, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var be *BudgetError
	var div *Divergence
	if errors.As(err, &be) || errors.As(err, &div) {
		return false
	}
	var api *APIError
	if errors.As(err, &api) {
		s := api.Status
		return s >= 500 || s == 408 || s == 429 || s == 404 || api.Code == "model_not_found" || api.Type == "not_found_error"
	}
	return a.Provider != "script"
}

// callAgent makes one call to agent a (checked against the run's limits,
// answered by its provider or by the recording) and records it. failed
// lists the calls that failed before it, when a is a fallback.
func (ss *Session) callAgent(ctx context.Context, a *Agent, failed []Failure) (*Response, error) {
	req := ss.request(a)
	canon, sum, err := req.Canonical()
	if err != nil {
		return nil, fmt.Errorf("agent %s: encoding the request: %w", a.Name, err)
	}
	canon, sum = ss.set.masked(canon, sum)
	if ctx.Err() != nil { // canceled (a failed sibling, Ctrl-C): no call starts
		return nil, context.Cause(ctx)
	}
	replayed := ss.set.replay != nil && !ss.live()
	if ss.set.replay != nil && !replayed && a.LiveModel != "" {
		req.Model = a.LiveModel // a fork's live part, with another model
		canon, sum, _ = req.Canonical()
		canon, sum = ss.set.masked(canon, sum)
	}
	call, held, err := ss.set.begin(ss.board, ss.label, ss.visit, a, req)
	if err != nil {
		return nil, err
	}
	info := &callInfo{label: ss.label, visit: ss.visit, call: call, log: ss.Log}
	if on := ss.set.onStream; on != nil {
		info.delta = func(text string) {
			on(StreamChunk{Agent: a.Name, Label: ss.label, Visit: ss.visit, Call: call, Text: text})
		}
	}
	start := time.Now()
	var resp *Response
	var recorded *board.Recording // a replayed answer as its recording holds it
	reused, resumed, again := false, false, false
	if ss.own != nil {
		if rec, ok := ss.ownCall(KindLLM, call, sum); ok {
			if r, derr := decodeRecorded(rec); derr == nil {
				resp, again = r, true
			}
		}
	}
	if again {
		// Made and paid before the visit stopped to ask: its tokens and
		// cost are the run's already.
		ss.stats.Calls++
		ss.call = call
		ss.stats.Usage = ss.stats.Usage.Add(resp.Usage)
		ss.stats.CostUSD += resp.CostUSD
		ss.stats.Model, ss.stats.FinishReason, ss.stats.Agent = resp.Model, resp.FinishReason, a.Name
		ss.set.done(ss.label, ss.visit, call, Usage{}, 0, held)
		ss.Messages = append(ss.Messages, Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
		ss.posted = len(ss.Messages)
		return resp, nil
	}
	if !replayed {
		// Answered already by a lost attempt of this step (its worker
		// died): the same call, not paid again, recorded as it was.
		if resp, resumed = ss.set.resumedAnswer(info, sum); resumed {
			if sc, ok := a.p.(*script); ok {
				sc.take(ss.label, ss.visit)
			}
		}
	}
	if ss.set.reuse != nil && !replayed && !resumed {
		if resp, reused = ss.set.reuse.answer(info, sum); reused {
			resp.Reused = true
			ss.stats.Retries += resp.Retries
			if sc, ok := a.p.(*script); ok {
				sc.take(ss.label, ss.visit) // the script's place moves on as if it had answered
			}
		}
	}
	batch := ss.Batch
	ss.Batch = nil
	if batch != nil && (reused || resumed || replayed) {
		batch = nil
		ss.BatchLeave()
	}
	batched := false
	switch {
	case reused, resumed:
	case replayed:
		resp, recorded, err = ss.replayed(info, a, canon, sum)
		if err == nil {
			ss.stats.Retries += resp.Retries
		}
	default:
		if batch != nil {
			resp, err = batch(ctx, &BatchCall{agent: a, req: req})
			if batched = resp != nil; batched && ss.set.reuse != nil {
				ss.set.reuse.paid(resp.Usage)
			}
		}
		if batched || err != nil {
			break
		}
		var retries int
		resp, retries, err = a.p.complete(ctx, info, req)
		ss.stats.Retries += retries
		ss.retries += retries
		if resp != nil {
			// Retries of failed agents before a fallback count too.
			resp.FailedOver, resp.Retries = failed, ss.retries
			if ss.set.reuse != nil {
				ss.set.reuse.paid(resp.Usage)
			}
		}
	}
	if err == nil && (reused || resumed || replayed) {
		// Paid before, or not at all: nothing for the shared budgets.
		if lerr := held.led.Settle(0, 0); lerr != nil {
			ss.Log.Warn().Err(lerr).Msg("budget ledger: a call's real cost was not written; its hold counts until it expires")
		}
	}
	if err != nil {
		ss.set.release(held)
		var div *Divergence
		var fell *fellBack
		if errors.As(err, &div) || errors.As(err, &fell) {
			return nil, err
		}
		return nil, fmt.Errorf("agent %s: %w", a.Name, err)
	}
	// At the model's price when the answer was made: a replayed or reused
	// answer carries its cost (also a reused one, so that a replay of this
	// run reports the same).
	cost := resp.CostUSD
	if !reused && !replayed && !resumed {
		var priced bool
		if batched {
			cost, priced = batchCost(a, req, resp)
		} else {
			cost, priced = callCost(a, req, resp)
		}
		cost = roundUSD(cost)
		resp.CostUSD, resp.Priced = cost, priced
	}
	ss.stats.Calls++
	ss.call = call
	ss.stats.Usage = ss.stats.Usage.Add(resp.Usage)
	ss.stats.CostUSD += cost
	ss.stats.Model, ss.stats.FinishReason, ss.stats.Agent = resp.Model, resp.FinishReason, a.Name
	ss.set.done(ss.label, ss.visit, call, resp.Usage, cost, held)
	if err := ss.record(info, a, canon, sum, resp, recorded); err != nil {
		return nil, err
	}
	ss.Log.Debug().Int("call", call).Str("model", resp.Model).Int("input_tokens", resp.Usage.InputTokens).
		Int("output_tokens", resp.Usage.OutputTokens).Float64("cost_usd", cost).Str("finish_reason", resp.FinishReason).
		Dur("took", time.Since(start)).Msg("model call")
	return resp, nil
}

// live reports whether a fork has handed this visit to the real providers.
func (ss *Session) live() bool {
	f, ok := ss.set.replay.(ForkSource)
	return ok && f.Live(ss.label, ss.visit)
}

// replayed answers a call from the replay source, or says how the run
// diverged from it.
func (ss *Session) replayed(c *callInfo, a *Agent, canon json.RawMessage, sum string) (*Response, *board.Recording, error) {
	rec, ok := ss.set.replay.Recording(c.label, c.visit, c.call)
	if !ok {
		return nil, nil, &Divergence{Label: c.label, Visit: c.visit, Call: c.call, Now: canon}
	}
	if rec.Agent != "" && rec.Agent != a.Name && a == ss.agent && slices.Contains(a.Spec.Fallback, rec.Agent) {
		return nil, nil, &fellBack{agent: rec.Agent}
	}
	if rec.RequestSHA256 != sum {
		recorded := rec.Request
		if recorded == nil {
			recorded = json.RawMessage(`null`) // kept without its request: still a divergence, not a missing call
		}
		return nil, nil, &Divergence{Label: c.label, Visit: c.visit, Call: c.call, Recorded: recorded, Now: canon}
	}
	resp, err := decodeRecorded(rec)
	if err != nil {
		return nil, nil, fmt.Errorf("replay: step %s visit %d call %d: the recorded answer is unreadable: %w", c.label, c.visit, c.call, err)
	}
	return resp, &rec, nil
}

// decodeRecorded is the answer a recording holds. A large text the
// recording holds apart (board.RecordingsKeyed) is its own string, shared,
// neither built into JSON nor decoded from it.
func decodeRecorded(rec board.Recording) (*Response, error) {
	resp, err := decodeResponse(rec.Response)
	if err != nil {
		return nil, err
	}
	resp.Text = rec.Text(resp.Text)
	return resp, nil
}

func decodeResponse(raw json.RawMessage) (*Response, error) {
	var r Response
	// The text through bigText: encoding/json unquotes a text with
	// escapes (a model's answer has newlines) into a scratch buffer and
	// copies that into the string, twice a 50 MiB answer.
	in := struct {
		*Response
		Text bigText `json:"text"`
	}{Response: &r}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, err
	}
	r.Text = string(in.Text)
	return &r, nil
}

// decodeUsage is decodeResponse without the text (left empty): for the
// sums of tokens and cost, which every run makes at its end and a resume
// at its start; decoding the text copied each recorded answer to read
// its usage.
func decodeUsage(raw json.RawMessage) (*Response, error) {
	var r Response
	in := struct {
		*Response
		Text skipText `json:"text"`
	}{Response: &r}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, err
	}
	return &r, nil
}

// skipText is a JSON value not decoded (json.Unmarshal has checked it).
type skipText struct{}

func (*skipText) UnmarshalJSON([]byte) error { return nil }

// bigText is a JSON string decoded in one allocation of its size.
type bigText string

func (t *bigText) UnmarshalJSON(lit []byte) error {
	if string(lit) == "null" {
		return nil // as encoding/json leaves a string
	}
	s, err := bigjson.Unquote(lit)
	if err != nil {
		return fmt.Errorf("text: %w", err)
	}
	*t = bigText(s)
	return nil
}

// record puts the call on the board: the messages sent that are not there
// yet, the answer, and the exchange as a recording. recorded, when not
// nil, is the replayed recording: the replay's recording shares its
// response's bytes, and the texts it holds apart, rather than encoding
// the answer again (which would hold a 50 MiB answer once more), and
// says what the original said, byte for byte.
func (ss *Session) record(c *callInfo, a *Agent, canon json.RawMessage, sum string, resp *Response, recorded *board.Recording) error {
	b := ss.board
	ss.Messages = append(ss.Messages, Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls,
		Reasoning: resp.Reasoning, Thinking: resp.Thinking})
	if b == nil {
		ss.posted = len(ss.Messages)
		return nil
	}
	base := func() map[string]any {
		return map[string]any{"visit": c.visit, "call": c.call, "model": a.Model}
	}
	for _, m := range ss.Messages[ss.posted : len(ss.Messages)-1] {
		meta := base()
		if m.Role == RoleTool {
			meta["tool_call_id"], meta["tool"] = m.ToolCallID, m.Name
			if m.IsError {
				meta["is_error"] = true
			}
		}
		if len(m.ToolCalls) > 0 {
			meta["tool_calls"] = m.ToolCalls
		}
		if _, err := b.Append(board.Entry{Section: Section, Role: m.Role, Author: a.Name,
			Label: ss.label, Content: m.Content, Meta: meta}); err != nil {
			return err
		}
	}
	meta := base()
	meta["model"] = resp.Model
	meta["usage"] = resp.Usage
	meta["finish_reason"] = resp.FinishReason
	if len(resp.ToolCalls) > 0 {
		meta["tool_calls"] = resp.ToolCalls
	}
	if len(resp.FailedOver) > 0 {
		meta["fallback_for"] = resp.FailedOver[0].Agent
		meta["failed_over"] = resp.FailedOver
	}
	if _, err := b.Append(board.Entry{Section: Section, Role: RoleAssistant, Author: a.Name,
		Label: ss.label, Content: resp.Text, Meta: meta}); err != nil {
		return err
	}
	ss.posted = len(ss.Messages)
	rec := board.Recording{Label: c.label, Visit: c.visit, Kind: KindLLM, Call: c.call,
		Agent: a.Name, RequestSHA256: sum, Request: bytes.Clone(canon)}
	if recorded != nil {
		rec.HoldResponseOf(*recorded)
	} else {
		out, h, err := encodeResponseHeld(resp)
		if err != nil {
			return err
		}
		rec.Response = out
		rec.Hold(h)
	}
	return b.AddRecording(rec)
}

func (ss *Session) read(author, key string) (board.Entry, bool, error) {
	if ss.Read != nil {
		return ss.Read(author, key)
	}
	return ss.board.ReadAsAt(author, key, ss.now)
}

func (ss *Session) now() time.Time {
	if ss.Now != nil {
		return ss.Now()
	}
	return time.Now().UTC()
}

package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/planrunner/runner/board"
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

	posted int // Messages already on the board
	call   int // number of the last call within the visit
	stats  Stats
}

// Stats sum up a session's calls, for the step's result.
type Stats struct {
	Calls        int
	Retries      int
	Usage        Usage
	CostUSD      float64
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

func (ss *Session) request() *Request {
	spec := ss.agent.Spec
	return &Request{Model: ss.agent.Model, System: ss.System, Messages: ss.Messages, Tools: ss.Tools,
		Schema: ss.Schema, Temperature: spec.Temperature, MaxTokens: spec.MaxTokens, Seed: spec.Seed}
}

func (ss *Session) send(ctx context.Context) (*Response, error) {
	req := ss.request()
	canon, sum, err := req.Canonical()
	if err != nil {
		return nil, fmt.Errorf("agent %s: encoding the request: %w", ss.agent.Name, err)
	}
	canon, sum = ss.set.masked(canon, sum)
	if ctx.Err() != nil { // canceled (a failed sibling, Ctrl-C): no call starts
		return nil, context.Cause(ctx)
	}
	call, err := ss.set.begin(ss.board, ss.label, ss.visit)
	if err != nil {
		return nil, err
	}
	info := &callInfo{label: ss.label, visit: ss.visit, call: call, log: ss.Log}
	start := time.Now()
	var resp *Response
	reused := false
	if ss.set.reuse != nil && (ss.set.replay == nil || ss.live()) {
		if resp, reused = ss.set.reuse.answer(info, sum); reused {
			ss.stats.Retries += resp.Retries
			if sc, ok := ss.agent.p.(*script); ok {
				sc.take(ss.label) // the script's place moves on as if it had answered
			}
		}
	}
	switch {
	case reused:
	case ss.set.replay != nil && !ss.live():
		resp, err = ss.replayed(info, canon, sum)
		if err == nil {
			ss.stats.Retries += resp.Retries
		}
	default:
		if ss.set.replay != nil && ss.agent.LiveModel != "" {
			req.Model = ss.agent.LiveModel
			canon, sum, _ = req.Canonical()
			canon, sum = ss.set.masked(canon, sum)
		}
		var retries int
		resp, retries, err = ss.agent.p.complete(ctx, info, req)
		ss.stats.Retries += retries
		if resp != nil {
			resp.Retries = retries
			if ss.set.reuse != nil {
				ss.set.reuse.paid(resp.Usage)
			}
		}
	}
	if err != nil {
		var div *Divergence
		if errors.As(err, &div) {
			return nil, err
		}
		return nil, fmt.Errorf("agent %s: %w", ss.agent.Name, err)
	}
	ss.stats.Calls++
	ss.call = call
	ss.stats.Usage = ss.stats.Usage.Add(resp.Usage)
	ss.stats.Model, ss.stats.FinishReason = resp.Model, resp.FinishReason
	ss.set.done(ss.label, ss.visit, call, resp.Usage)
	if err := ss.record(info, canon, sum, resp); err != nil {
		return nil, err
	}
	ss.Log.Debug().Int("call", call).Str("model", resp.Model).Int("input_tokens", resp.Usage.InputTokens).
		Int("output_tokens", resp.Usage.OutputTokens).Str("finish_reason", resp.FinishReason).
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
func (ss *Session) replayed(c *callInfo, canon json.RawMessage, sum string) (*Response, error) {
	rec, ok := ss.set.replay.Recording(c.label, c.visit, c.call)
	if !ok {
		return nil, &Divergence{Label: c.label, Visit: c.visit, Call: c.call, Now: canon}
	}
	if rec.RequestSHA256 != sum {
		recorded := rec.Request
		if recorded == nil {
			recorded = json.RawMessage(`null`) // kept without its request: still a divergence, not a missing call
		}
		return nil, &Divergence{Label: c.label, Visit: c.visit, Call: c.call, Recorded: recorded, Now: canon}
	}
	resp, err := decodeResponse(rec.Response)
	if err != nil {
		return nil, fmt.Errorf("replay: step %s visit %d call %d: the recorded answer is unreadable: %w", c.label, c.visit, c.call, err)
	}
	return resp, nil
}

func decodeResponse(raw json.RawMessage) (*Response, error) {
	var r Response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// record puts the call on the board: the messages sent that are not there
// yet, the answer, and the exchange as a recording.
func (ss *Session) record(c *callInfo, canon json.RawMessage, sum string, resp *Response) error {
	b := ss.board
	ss.Messages = append(ss.Messages, Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
	if b == nil {
		ss.posted = len(ss.Messages)
		return nil
	}
	base := func() map[string]any {
		return map[string]any{"visit": c.visit, "call": c.call, "model": ss.agent.Model}
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
		if _, err := b.Append(board.Entry{Section: Section, Role: m.Role, Author: ss.agent.Name,
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
	if _, err := b.Append(board.Entry{Section: Section, Role: RoleAssistant, Author: ss.agent.Name,
		Label: ss.label, Content: resp.Text, Meta: meta}); err != nil {
		return err
	}
	ss.posted = len(ss.Messages)
	out, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	return b.AddRecording(board.Recording{Label: c.label, Visit: c.visit, Kind: KindLLM, Call: c.call,
		Agent: ss.agent.Name, RequestSHA256: sum, Request: bytes.Clone(canon), Response: out})
}

func (ss *Session) now() time.Time {
	if ss.Now != nil {
		return ss.Now()
	}
	return time.Now().UTC()
}

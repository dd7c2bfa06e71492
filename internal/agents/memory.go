package agents

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/planrunner/runner/internal/board"
)

// Memory across visits (an agent's `memory: conversation`).
//
// The memory is not held in the process: it is read, at the start of each
// step visit, from the run's recordings of the agent's earlier calls. A
// request of a memory agent says so (Request.Memory: whose memory, how
// many of its leading messages come from it), so the visit's own messages
// are the recorded request's messages after those, plus the recorded
// answer. Reading it back from the board is what makes a resumed run
// (kill -9, then `runner resume`), a replay and a run on Temporal send
// the same messages as the run did: each rebuilds the memory from the
// same recordings, and a replay whose history differs has a request that
// differs, which is a divergence.

// MemoryRef says which of a request's messages come from an agent's
// memory: the first Messages of them, from Agent's earlier visits, after
// Dropped of its oldest turns were left out to stay within the bound.
type MemoryRef struct {
	Agent    string `json:"agent"`
	Messages int    `json:"messages"`
	Dropped  int    `json:"dropped_turns,omitempty"`
}

// MemoryError is a visit whose own system prompt and prompt do not fit
// the agent's memory bound: nothing could be sent within it.
type MemoryError struct {
	Agent     string
	Label     string
	MaxTokens int
	Tokens    int // the system prompt and the prompt, estimated
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("agent %s: memory.max_tokens is %d, but the system prompt and the prompt of step %s alone come to about %d tokens "+
		"(4 bytes a token), so not even they fit: raise the agent's memory.max_tokens or shorten the prompt", e.Agent, e.MaxTokens, e.Label, e.Tokens)
}

// Remember starts the visit's conversation with the agent's memory, when
// the agent has `memory: conversation`: its earlier turns in the run, the
// oldest whole turns dropped until the system prompt, the memory and
// prompt (the visit's first message, sent next) fit memory.max_tokens.
// Call it once, before the first Send, with System final. A second visit
// of the same agent while this one runs is refused: a conversation has
// one visit at a time, so its order is the run's and a replay's alike.
// Close ends the hold.
func (ss *Session) Remember(prompt string) error {
	spec := ss.agent.Spec
	if spec == nil || !spec.Memory.On() || ss.memory != nil {
		return nil
	}
	if err := ss.set.holdMemory(ss.agent.Name, ss.label, ss.visit); err != nil {
		return err
	}
	ss.memHeld = ss.agent.Name
	bound := spec.Memory.MaxTokens
	fixed := len(ss.System) + len(prompt)
	if tokensOf(fixed) > bound {
		return &MemoryError{Agent: ss.agent.Name, Label: ss.label, MaxTokens: bound, Tokens: tokensOf(fixed)}
	}
	turns, err := ss.set.memoryTurns(ss.board, ss.agent.Name, ss.label, ss.visit)
	if err != nil {
		return err
	}
	total := fixed
	for _, t := range turns {
		total += t.size
	}
	drop := 0
	for drop < len(turns) && tokensOf(total) > bound {
		total -= turns[drop].size
		drop++
	}
	var msgs []Message
	for _, t := range turns[drop:] {
		msgs = append(msgs, t.msgs...)
	}
	ss.Messages = msgs
	ss.posted = len(msgs) // on the board already, as the earlier visits' entries
	ss.memory = &MemoryRef{Agent: ss.agent.Name, Messages: len(msgs), Dropped: drop}
	if drop > 0 {
		ss.Log.Debug().Int("dropped_turns", drop).Int("kept_messages", len(msgs)).Int("max_tokens", bound).Msg("memory: oldest turns dropped")
	}
	return nil
}

// releaseMemory ends the session's hold on its agent's memory.
func (ss *Session) releaseMemory() {
	if ss.memHeld != "" {
		ss.set.releaseMemory(ss.memHeld)
		ss.memHeld = ""
	}
}

// holdMemory marks agent's memory as in use by a visit of label.
func (s *Set) holdMemory(agent, label string, visit int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.memBusy == nil {
		s.memBusy = map[string]visitKey{}
	}
	if by, busy := s.memBusy[agent]; busy {
		return fmt.Errorf("agent %s has memory: conversation, and step %s (visit %d) would use it while step %s (visit %d) does: "+
			"a conversation takes one visit at a time, in an order a replay can repeat; run these steps one after another "+
			"(max_concurrency: 1) or give one of them an agent of its own", agent, label, visit, by.label, by.visit)
	}
	s.memBusy[agent] = visitKey{label, visit}
	return nil
}

func (s *Set) releaseMemory(agent string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.memBusy, agent)
}

// tokensOf is the memory bound's estimate of a text's tokens: 4 bytes a
// token, rounded up, as the script provider bills. Deterministic on
// purpose: the same recordings always keep the same turns.
func tokensOf(n int) int { return (n + 3) / 4 }

// turn is one user message and what followed it up to the next: the
// model's answers, its tool calls and their results. Turns are what the
// bound drops, whole, so a tool call never loses its result.
type turn struct {
	msgs []Message
	size int // bytes counted against the bound
}

func messageSize(m Message) int {
	n := len(m.Content)
	for _, tc := range m.ToolCalls {
		n += len(tc.Name) + len(tc.Args)
	}
	return n
}

// memoryTurns reads agent's memory from the board's recordings: the
// conversations of its earlier visits, in the order they started, split
// into turns. The visit label/visit itself is left out (an earlier
// attempt of it, or its calls before a kill and resume): it is the one
// under way. Of a visit's several attempts only the last conversation is
// kept, so a retried or resumed visit remembers what the run ended with.
func (s *Set) memoryTurns(b *board.Board, agent, label string, visit int) ([]turn, error) {
	if b == nil {
		return nil, nil
	}
	// First which visits are the agent's, and the last call of each
	// (reading only the memory field of each request): a call sends the
	// whole conversation so far again, so the visit's last call and its
	// answer are the whole visit, and a later attempt's calls come after
	// an earlier one's.
	// Keyed (board.RecordingsKeyed): only the conversations remembered
	// are built whole, not every large answer of the run.
	recs := b.RecordingsKeyed()
	var order []visitKey
	last := map[visitKey]int{}
	for i, r := range recs {
		if r.Kind != KindLLM || (r.Label == label && r.Visit == visit) {
			continue
		}
		ref, err := s.memoryRef(r)
		if err != nil {
			return nil, fmt.Errorf("memory of agent %s: the recorded request of step %s visit %d call %d is unreadable: %w", agent, r.Label, r.Visit, r.Call, err)
		}
		if ref == nil || ref.Agent != agent {
			continue
		}
		k := visitKey{r.Label, r.Visit}
		if _, seen := last[k]; !seen {
			order = append(order, k)
		}
		last[k] = i
	}
	convos := make([][]Message, 0, len(order))
	for _, k := range order {
		own, err := s.visitMessages(recs[last[k]].Whole())
		if err != nil {
			return nil, fmt.Errorf("memory of agent %s: %w", agent, err)
		}
		convos = append(convos, own)
	}
	var turns []turn
	for _, msgs := range convos {
		// A conversation that ended on tool calls never sent their
		// results (the step failed there): the calls go, as the
		// providers refuse a call without its result.
		if n := len(msgs); n > 0 && msgs[n-1].Role == RoleAssistant && len(msgs[n-1].ToolCalls) > 0 {
			msgs = msgs[:n-1]
		}
		for _, m := range msgs {
			if m.Role == RoleUser || len(turns) == 0 {
				turns = append(turns, turn{})
			}
			t := &turns[len(turns)-1]
			t.msgs = append(t.msgs, m)
			t.size += messageSize(m)
		}
	}
	return turns, nil
}

// memoryKey names one recorded call: its place and its request's hash,
// which together fix its bytes.
type memoryKey struct {
	label     string
	visit     int
	call      int
	requestSH string
}

// visitMessages is a memory agent's visit as its recorded call r holds
// it: the messages after the memory, and the answer. Decoded once per
// run (a visit start reads every earlier visit of the agent, and the
// last request of each holds the whole memory it was sent).
func (s *Set) visitMessages(r board.Recording) ([]Message, error) {
	k := memoryKey{r.Label, r.Visit, r.Call, r.RequestSHA256}
	s.memMu.Lock()
	own, ok := s.memCache[k]
	s.memMu.Unlock()
	if ok {
		return own, nil
	}
	var req Request
	if err := json.Unmarshal(r.Request, &req); err != nil {
		return nil, fmt.Errorf("the recorded request of step %s visit %d call %d is unreadable: %w", r.Label, r.Visit, r.Call, err)
	}
	if req.Memory == nil || req.Memory.Messages > len(req.Messages) || req.Memory.Messages < 0 {
		return nil, fmt.Errorf("the recorded request of step %s visit %d call %d does not say which of its %d messages are memory",
			r.Label, r.Visit, r.Call, len(req.Messages))
	}
	resp, err := decodeResponse(r.Response)
	if err != nil {
		return nil, fmt.Errorf("the recorded answer of step %s visit %d call %d is unreadable: %w", r.Label, r.Visit, r.Call, err)
	}
	own = append([]Message(nil), req.Messages[req.Memory.Messages:]...)
	own = append(own, Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls, Reasoning: resp.Reasoning})
	for i := range own {
		own[i] = canonicalMessage(own[i])
	}
	s.memMu.Lock()
	if s.memCache == nil {
		s.memCache = map[memoryKey][]Message{}
	}
	s.memCache[k] = own
	s.memMu.Unlock()
	return own, nil
}

// memoryRef is memoryRefOf of a recorded call, read once per run (nil:
// the call is not a memory agent's).
func (s *Set) memoryRef(r board.Recording) (*MemoryRef, error) {
	k := memoryKey{r.Label, r.Visit, r.Call, r.RequestSHA256}
	s.memMu.Lock()
	ref, ok := s.memRefs[k]
	s.memMu.Unlock()
	if ok {
		return ref, nil
	}
	ref, err := memoryRefOf(r.Request)
	if err != nil {
		return nil, err
	}
	s.memMu.Lock()
	if s.memRefs == nil {
		s.memRefs = map[memoryKey]*MemoryRef{}
	}
	s.memRefs[k] = ref
	s.memMu.Unlock()
	return ref, nil
}

// memoryRefOf reads the memory field of a recorded request. It is the
// last field of a canonical request, so it is read from the end without
// decoding the messages (a visit start reads every earlier request of the
// run); a request in another form is decoded whole.
func memoryRefOf(req []byte) (*MemoryRef, error) {
	key := []byte(`"memory":`)
	i := bytes.LastIndex(req, key)
	if i < 0 {
		return nil, nil // no memory field anywhere
	}
	{
		d := json.NewDecoder(bytes.NewReader(req[i+len(key):]))
		var ref MemoryRef
		if d.Decode(&ref) == nil {
			rest := bytes.TrimSpace(req[i+len(key)+int(d.InputOffset()):])
			if string(rest) == "}" {
				return &ref, nil
			}
		}
	}
	var head struct {
		Memory *MemoryRef `json:"memory"`
	}
	if err := json.Unmarshal(req, &head); err != nil {
		return nil, err
	}
	return head.Memory, nil
}

// canonicalMessage is m with its tool calls' arguments in canonical form
// (as a recorded request holds them), so a memory sent again hashes the
// same whether a turn came from a request or an answer.
func canonicalMessage(m Message) Message {
	if len(m.ToolCalls) == 0 {
		return m
	}
	m.ToolCalls = append([]ToolCall(nil), m.ToolCalls...)
	for i := range m.ToolCalls {
		args := normalizeArgs(m.ToolCalls[i].Args)
		if c, err := canonicalJSON(args); err == nil {
			args = c
		}
		m.ToolCalls[i].Args = args
	}
	return m
}

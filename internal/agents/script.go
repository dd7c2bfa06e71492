package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/planrunner/runner/internal/plans"
)

// script answers from canned responses, without the network: a step's own
// answers (keyed by its label) first, in order, then the unlabeled list in
// order.
type script struct {
	agent *Agent

	mu        sync.Mutex
	load      func() ([]plans.Response, error) // the answers, read on first use; nil once read
	loadErr   error
	byLabel   map[string][]plans.Response
	unlabeled []plans.Response
	next      map[string]int // next answer per label
	free      int            // next unlabeled answer
}

// newScript makes a script agent whose answers load gives. A run reads
// them at once (a broken responses file is an error before the first
// step); a replay only when the live part of a fork asks, so replaying
// a recording neither needs the file nor holds its answers.
func newScript(a *Agent, load func() ([]plans.Response, error), eager bool) (*script, error) {
	s := &script{agent: a, load: load, byLabel: map[string][]plans.Response{}}
	s.reset()
	if eager {
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.loadLocked(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *script) loadLocked() error {
	if s.load == nil {
		return s.loadErr
	}
	responses, err := s.load()
	s.load = nil
	if err != nil {
		s.loadErr = err
		return err
	}
	for _, r := range responses {
		if r.Label == "" {
			s.unlabeled = append(s.unlabeled, r)
		} else {
			s.byLabel[r.Label] = append(s.byLabel[r.Label], r)
		}
	}
	return nil
}

func (s *script) reset() {
	s.mu.Lock()
	s.next, s.free = map[string]int{}, 0
	s.mu.Unlock()
}

// take hands out the answer for the next call of step label.
func (s *script) take(label string) (plans.Response, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return plans.Response{}, false, err
	}
	if i := s.next[label]; i < len(s.byLabel[label]) {
		s.next[label]++
		return s.byLabel[label][i], true, nil
	}
	// A called plan's step (CALL/LABEL) takes the answers its own file
	// keys by its label there.
	if j := strings.LastIndexByte(label, '/'); j >= 0 {
		local := label[j+1:]
		if i := s.next[local]; i < len(s.byLabel[local]) {
			s.next[local]++
			return s.byLabel[local][i], true, nil
		}
	}
	if s.free < len(s.unlabeled) {
		s.free++
		return s.unlabeled[s.free-1], true, nil
	}
	return plans.Response{}, false, nil
}

func (s *script) complete(_ context.Context, c *callInfo, req *Request) (*Response, int, error) {
	r, ok, err := s.take(c.label)
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return nil, 0, fmt.Errorf("script agent %s has no answer left for step %s (call %d of visit %d): %d answers for %s and %d unlabeled ones were all used",
			s.agent.Name, c.label, c.call, c.visit, len(s.byLabel[c.label]), c.label, len(s.unlabeled))
	}
	model := req.Model
	if model == "" {
		model = "script"
	}
	out := &Response{Text: r.Text, Model: model, FinishReason: "stop", Usage: estimateUsage(req, r.Text)}
	for i, tc := range r.ToolCalls {
		args, err := json.Marshal(jsonable(tc.Args))
		if err != nil {
			return nil, 0, fmt.Errorf("script agent %s: tool call %s: %w", s.agent.Name, tc.Name, err)
		}
		if tc.Args == nil {
			args = []byte(`{}`)
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: fmt.Sprintf("call_%d_%d", c.call, i+1), Name: tc.Name, Args: args})
	}
	if len(out.ToolCalls) > 0 {
		out.FinishReason = "tool_calls"
	}
	return out, 0, nil
}

// jsonable turns YAML-decoded values (which may hold map[any]any... in
// principle, and map[string]any in practice) into values encoding/json
// accepts.
func jsonable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = jsonable(x)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[fmt.Sprint(k)] = jsonable(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = jsonable(x)
		}
		return out
	}
	return v
}

// estimateUsage counts a scripted exchange's tokens the way a model would
// roughly bill it (4 characters a token, rounded up), so an offline run
// shows tokens per model and exercises limits.max_tokens like a real one.
func estimateUsage(req *Request, answer string) Usage {
	in := len(req.System)
	for _, m := range req.Messages {
		in += len(m.Content)
		for _, tc := range m.ToolCalls {
			in += len(tc.Name) + len(tc.Args)
		}
	}
	return Usage{InputTokens: (in + 3) / 4, OutputTokens: (len(answer) + 3) / 4}
}

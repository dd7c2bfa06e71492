package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/planrunner/runner/internal/plans"
)

// script answers from canned responses, without the network: a step's own
// answers (keyed by its label) first, in order, then the unlabeled list in
// order, then the default ("*"). An item of a fan-out (a label with an
// item index, LABEL[i] or LABEL[i]/INNER) whose own answers are used up
// takes answer i of its step's list, so the answers follow the items'
// order, not the order their calls come in.
type script struct {
	agent *Agent

	mu        sync.Mutex
	load      func() ([]plans.Response, error) // the answers, read on first use; nil once read
	loadErr   error
	byLabel   map[string][]plans.Response
	unlabeled []plans.Response
	next      map[string]int // next answer per label
	free      int            // next unlabeled answer
	fallback  int            // next default answer; the last one repeats
	fan       map[string]*fanPlace
	itemDone  map[itemCall]bool // items that took their answer from the list
}

// DefaultResponseKey keys the answers of any call the others leave
// unanswered; it cannot be a step's label.
const DefaultResponseKey = "*"

// fanPlace is where a visit of a fan-out starts in its key's answers: a
// later visit (a loop) goes on after the answers the earlier one used.
type fanPlace struct {
	visit, base, end int
}

type itemCall struct {
	label string
	visit int
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
	s.next, s.free, s.fallback = map[string]int{}, 0, 0
	s.fan, s.itemDone = map[string]*fanPlace{}, map[itemCall]bool{}
	s.mu.Unlock()
}

// itemKey finds the fan-out item a call belongs to: for LABEL[i] the
// answers keyed LABEL, for LABEL[i]/INNER (a step of an item's block)
// those keyed INNER; index is the item's.
func itemKey(label string) (key string, index int, ok bool) {
	segs := strings.Split(label, "/")
	last := segs[len(segs)-1]
	if l, i, ok := splitItem(last); ok {
		return l, i, true
	}
	for j := len(segs) - 2; j >= 0; j-- {
		if _, i, ok := splitItem(segs[j]); ok {
			return last, i, true
		}
	}
	return "", 0, false
}

// splitItem reads LABEL[i] (the engine's item label).
func splitItem(s string) (string, int, bool) {
	open := strings.LastIndexByte(s, '[')
	if open <= 0 || !strings.HasSuffix(s, "]") {
		return "", 0, false
	}
	i, err := strconv.Atoi(s[open+1 : len(s)-1])
	if err != nil || i < 0 || strconv.Itoa(i) != s[open+1:len(s)-1] {
		return "", 0, false
	}
	return s[:open], i, true
}

// take hands out the answer for the next call of step label at visit.
func (s *script) take(label string, visit int) (plans.Response, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return plans.Response{}, false, err
	}
	if r, ok := s.ownLocked(label); ok {
		return r, true, nil
	}
	key, index, isItem := itemKey(label)
	// A called plan's step (CALL/LABEL) takes the answers its own file
	// keys by its label there; a step of a fan-out's block takes them by
	// item, below.
	if j := strings.LastIndexByte(label, '/'); j >= 0 && (!isItem || key != label[j+1:]) {
		if r, ok := s.ownLocked(label[j+1:]); ok {
			return r, true, nil
		}
	}
	if isItem && len(s.byLabel[key]) > 0 {
		if r, ok := s.itemLocked(label, visit, key, index); ok {
			return r, true, nil
		}
	}
	if s.free < len(s.unlabeled) {
		s.free++
		return s.unlabeled[s.free-1], true, nil
	}
	if d := s.byLabel[DefaultResponseKey]; len(d) > 0 {
		r := d[min(s.fallback, len(d)-1)]
		s.fallback++
		return r, true, nil
	}
	return plans.Response{}, false, nil
}

// ownLocked serves the next of the answers keyed by label itself.
func (s *script) ownLocked(label string) (plans.Response, bool) {
	if i := s.next[label]; i < len(s.byLabel[label]) {
		s.next[label]++
		return s.byLabel[label][i], true
	}
	return plans.Response{}, false
}

// itemLocked serves item index of a fan-out its answer from the list
// keyed by key: one answer per item, the first call of the item's visit.
func (s *script) itemLocked(label string, visit int, key string, index int) (plans.Response, bool) {
	c := itemCall{label, visit}
	if s.itemDone[c] {
		return plans.Response{}, false
	}
	p := s.fan[key]
	if p == nil || p.visit != visit {
		base := s.next[key]
		if p != nil {
			base = max(base, p.end)
		}
		p = &fanPlace{visit: visit, base: base, end: base}
		s.fan[key] = p
	}
	at := p.base + index
	if at >= len(s.byLabel[key]) {
		return plans.Response{}, false
	}
	s.itemDone[c] = true
	p.end = max(p.end, at+1)
	return s.byLabel[key][at], true
}

func (s *script) complete(_ context.Context, c *callInfo, req *Request) (*Response, int, error) {
	r, ok, err := s.take(c.label, c.visit)
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

package agents

import (
	"encoding/json"

	"github.com/planrunner/runner/internal/board"
)

// KindCodingAgent is the Kind of a coding_agent step's recordings: Call
// 1, 2... are the model exchanges its proxy forwarded, Call 0 the
// session's outcome (its result and the change it made), which a replay
// gives again without the CLI.
const KindCodingAgent = "coding_agent"

// IsModelCall reports whether r records one model call: an llm step's
// (or an agent's), or one exchange a coding agent's proxy forwarded.
// Costs, tokens, reports and traces count these.
func IsModelCall(r board.Recording) bool {
	return r.Kind == KindLLM || r.Kind == KindCodingAgent && r.Call > 0
}

// PriceOf is the price of model for the agent named name: the plan's
// price, the prices file's or the built-in one.
func (s *Set) PriceOf(name, model string) (Price, bool) {
	a, ok := s.agents[name]
	if !ok {
		return Price{}, false
	}
	return priceFor(a, model)
}

// APIKey is the key of an agent's provider, from its api_key_env (or
// the provider's variable), and its base URL.
func (a *Agent) APIKey() (key, baseURL string) {
	switch p := a.p.(type) {
	case *anthropic:
		return p.key, p.baseURL
	case *openAI:
		return p.key, p.baseURL
	}
	return "", ""
}

// Charge counts usage metered outside the set's own calls (a coding
// agent's, through runner's proxy) against the run's limits, and fails
// with a *BudgetError once the run has crossed one.
func (s *Set) Charge(b *board.Board, u Usage, cost float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bindLocked(b)
	s.used += u.Total()
	s.spent += cost
	if s.maxTokens > 0 && s.used > s.maxTokens {
		return &BudgetError{Limit: s.maxTokens, Used: s.used}
	}
	if s.maxCost > 0 && s.spent > s.maxCost {
		return &BudgetError{LimitUSD: s.maxCost, SpentUSD: s.spent}
	}
	return nil
}

// Replayed is a step visit's recording of kind KindCodingAgent in a
// replay: replaying reports that the set serves one (and the visit is
// not the live part of a fork), ok that the recording has the call.
func (s *Set) Replayed(label string, visit, call int) (rec board.Recording, replaying, ok bool) {
	if s.replay == nil {
		return board.Recording{}, false, false
	}
	if f, fork := s.replay.(ForkSource); fork && f.Live(label, visit) {
		return board.Recording{}, false, false
	}
	cs, isCoding := s.replay.(CodingReplaySource)
	if !isCoding {
		return board.Recording{}, true, false
	}
	r, ok := cs.CodingRecording(label, visit, call)
	return r.Whole(), true, ok
}

// CodingReplaySource is a ReplaySource that also serves the recordings
// of coding_agent steps (FromRecordings' does; a fork's, before its live
// point, through it).
type CodingReplaySource interface {
	CodingRecording(label string, visit, call int) (board.Recording, bool)
}

func (m recordings) CodingRecording(label string, visit, call int) (board.Recording, bool) {
	r, ok := m[callKey{KindCodingAgent, label, visit, call}]
	return r, ok
}

// codingSpend is what a recorded model exchange of a coding agent (call
// 1, 2...: its proxy's Exchange) used and cost, at the agent's price.
func codingSpend(a *Agent, r board.Recording) (Usage, float64, bool) {
	var ex struct {
		Model   string  `json:"model"`
		Usage   Usage   `json:"usage"`
		CostUSD float64 `json:"cost_usd"`
		Priced  bool    `json:"priced"`
	}
	if r.Call == 0 || json.Unmarshal(r.Response, &ex) != nil {
		return Usage{}, 0, false
	}
	if ex.Priced {
		return ex.Usage, ex.CostUSD, true
	}
	if a == nil {
		return ex.Usage, 0, true
	}
	model := ex.Model
	if model == "" {
		model = a.Model
	}
	var cost float64
	if p, ok := priceFor(a, model); ok {
		cost = p.Cost(ex.Usage)
	}
	return ex.Usage, cost, true
}

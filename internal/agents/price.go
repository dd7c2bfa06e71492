package agents

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
)

// Price is what a model costs, in US dollars per million tokens. Cached
// input (a prompt-cache hit) and cache writes have their own prices where
// the provider bills them differently; zero means the input price.
type Price struct {
	Input       float64 `json:"input"`
	Output      float64 `json:"output"`
	CachedInput float64 `json:"cached_input,omitempty"`
	CacheWrite  float64 `json:"cache_write,omitempty"`
	// MaxOutput is the most tokens the model may answer with (0: not
	// known); it bounds a call that sets no max_tokens.
	MaxOutput int `json:"max_output,omitempty"`
}

// Prices are the built-in prices of well-known models, from the
// providers' published price lists (standard tier). A plan overrides them
// per agent with `price: {input, output}`. A model name matches its
// longest entry that it starts with, so dated snapshots
// (gpt-4o-mini-2024-07-18, claude-sonnet-4-5-20250929) take their family's
// price.
var Prices = map[string]Price{
	// OpenAI
	"gpt-5":         {Input: 1.25, Output: 10, CachedInput: 0.125, MaxOutput: 128000},
	"gpt-5-mini":    {Input: 0.25, Output: 2, CachedInput: 0.025, MaxOutput: 128000},
	"gpt-5-nano":    {Input: 0.05, Output: 0.40, CachedInput: 0.005, MaxOutput: 128000},
	"gpt-4.1":       {Input: 2, Output: 8, CachedInput: 0.50, MaxOutput: 32768},
	"gpt-4.1-mini":  {Input: 0.40, Output: 1.60, CachedInput: 0.10, MaxOutput: 32768},
	"gpt-4.1-nano":  {Input: 0.10, Output: 0.40, CachedInput: 0.025, MaxOutput: 32768},
	"gpt-4o":        {Input: 2.50, Output: 10, CachedInput: 1.25, MaxOutput: 16384},
	"gpt-4o-mini":   {Input: 0.15, Output: 0.60, CachedInput: 0.075, MaxOutput: 16384},
	"gpt-4-turbo":   {Input: 10, Output: 30, MaxOutput: 4096},
	"gpt-3.5-turbo": {Input: 0.50, Output: 1.50, MaxOutput: 4096},
	"o1":            {Input: 15, Output: 60, CachedInput: 7.50, MaxOutput: 100000},
	"o3":            {Input: 2, Output: 8, CachedInput: 0.50, MaxOutput: 100000},
	"o3-mini":       {Input: 1.10, Output: 4.40, CachedInput: 0.55, MaxOutput: 100000},
	"o4-mini":       {Input: 1.10, Output: 4.40, CachedInput: 0.275, MaxOutput: 100000},
	// Anthropic: cache reads cost a tenth of input, 5-minute cache writes
	// a quarter more.
	"claude-opus-4":     {Input: 15, Output: 75, CachedInput: 1.50, CacheWrite: 18.75, MaxOutput: 32000},
	"claude-opus-4-1":   {Input: 15, Output: 75, CachedInput: 1.50, CacheWrite: 18.75, MaxOutput: 32000},
	"claude-opus-4-5":   {Input: 5, Output: 25, CachedInput: 0.50, CacheWrite: 6.25, MaxOutput: 64000},
	"claude-sonnet-4":   {Input: 3, Output: 15, CachedInput: 0.30, CacheWrite: 3.75, MaxOutput: 64000},
	"claude-sonnet-4-5": {Input: 3, Output: 15, CachedInput: 0.30, CacheWrite: 3.75, MaxOutput: 64000},
	"claude-3-7-sonnet": {Input: 3, Output: 15, CachedInput: 0.30, CacheWrite: 3.75, MaxOutput: 64000},
	"claude-3-5-sonnet": {Input: 3, Output: 15, CachedInput: 0.30, CacheWrite: 3.75, MaxOutput: 8192},
	"claude-haiku-4-5":  {Input: 1, Output: 5, CachedInput: 0.10, CacheWrite: 1.25, MaxOutput: 64000},
	"claude-3-5-haiku":  {Input: 0.80, Output: 4, CachedInput: 0.08, CacheWrite: 1, MaxOutput: 8192},
	"claude-3-haiku":    {Input: 0.25, Output: 1.25, CachedInput: 0.03, CacheWrite: 0.30, MaxOutput: 4096},
	"claude-3-opus":     {Input: 15, Output: 75, CachedInput: 1.50, CacheWrite: 18.75, MaxOutput: 4096},
}

// priceFor is the price of a call by agent a to model: the plan's
// override, else the built-in table; ok is false when neither knows it.
// Script agents cost nothing unless the plan gives them a price.
func priceFor(a *Agent, model string) (Price, bool) {
	if p := a.Spec.Price; p != nil {
		return Price{Input: p.Input, Output: p.Output}, true
	}
	if a.Provider == "script" {
		return Price{}, true
	}
	return lookupPrice(model)
}

// lookupPrice finds a model in Prices: exactly, or by the longest name it
// starts with (followed by '-' or the end, so gpt-4o does not take o4's).
func lookupPrice(model string) (Price, bool) {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:] // openrouter-style "openai/gpt-4o"
	}
	if p, ok := Prices[m]; ok {
		return p, true
	}
	best := ""
	for name := range Prices {
		if len(name) > len(best) && strings.HasPrefix(m, name) && (len(m) == len(name) || m[len(name)] == '-' || m[len(name)] == '@') {
			best = name
		}
	}
	p, ok := Prices[best]
	return p, ok && best != ""
}

// Cost is what usage costs at price p, in US dollars. Usage.InputTokens
// counts cached and cache-write tokens too; they are billed at their own
// prices.
func (p Price) Cost(u Usage) float64 {
	cached, write := p.CachedInput, p.CacheWrite
	if cached == 0 {
		cached = p.Input
	}
	if write == 0 {
		write = p.Input
	}
	plain := max(u.InputTokens-u.CacheReadInputTokens-u.CacheCreationInputTokens, 0)
	return (float64(plain)*p.Input + float64(u.CacheReadInputTokens)*cached +
		float64(u.CacheCreationInputTokens)*write + float64(u.OutputTokens)*p.Output) / 1e6
}

// callCost is what a finished call cost: at the agent's price for the
// model that answered (or was asked, when the answer names none), nothing
// for a script agent; ok is false when the price is not known.
func callCost(a *Agent, req *Request, resp *Response) (cost float64, ok bool) {
	model := resp.Model
	if model == "" {
		model = req.Model
	}
	p, ok := priceFor(a, model)
	if !ok {
		if p, ok = priceFor(a, req.Model); !ok {
			return 0, false
		}
	}
	return p.Cost(resp.Usage), true
}

// inputEstimate bounds the input tokens of a request before it is sent:
// one token per 2 bytes of its text (tokenizers give about one per 4 for
// English and one per 3 for code), plus a few per message for roles and
// framing. The provider's own count replaces it once the call is made.
func inputEstimate(req *Request) int {
	n := len(req.System)
	for _, m := range req.Messages {
		n += len(m.Content) + len(m.Name)
		for _, tc := range m.ToolCalls {
			n += len(tc.Name) + len(tc.Args)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	n += len(req.Schema)
	return (n+1)/2 + 8*(len(req.Messages)+1)
}

// outputCap is the most tokens an answer to req may have: the request's
// max_tokens, what is sent for Anthropic without one, else the model's
// largest answer; 0 and false when nothing bounds it.
func outputCap(a *Agent, req *Request) (int, bool) {
	switch {
	case req.MaxTokens > 0:
		return req.MaxTokens, true
	case a.Provider == "anthropic":
		return DefaultAnthropicMaxTokens, true
	case a.Provider == "script":
		return 0, true // a script's answer is its own; its tokens are counted after
	}
	if p, ok := lookupPrice(req.Model); ok && p.MaxOutput > 0 {
		return p.MaxOutput, true
	}
	return 0, false
}

// checkLimits fails, before New returns, when a limit is set that some
// agent's calls could not be checked against: a model whose largest answer
// is unknown (no max_tokens), or, for limits.max_cost_usd, whose price is
// unknown.
func checkLimits(plan *plans.Plan, agents map[string]*Agent) error {
	if plan.Limits.MaxTokens <= 0 && plan.Limits.MaxCostUSD <= 0 {
		return nil
	}
	limit := "limits.max_tokens"
	if plan.Limits.MaxCostUSD > 0 {
		limit = "limits.max_cost_usd"
	}
	names := make([]string, 0, len(agents))
	for n := range agents {
		names = append(names, n)
	}
	sort.Strings(names)
	var probs []string
	for _, n := range names {
		a := agents[n]
		req := &Request{Model: a.Model, MaxTokens: a.Spec.MaxTokens}
		if _, ok := outputCap(a, req); !ok {
			probs = append(probs, fmt.Sprintf("agent %s: %s needs max_tokens on this agent: the most model %q may answer is not known, so its calls could not be checked against the limit", n, limit, a.Model))
		}
		if plan.Limits.MaxCostUSD > 0 {
			if _, ok := priceFor(a, a.Model); !ok {
				probs = append(probs, fmt.Sprintf("agent %s: limits.max_cost_usd needs the price of model %q: give the agent price: {input: USD, output: USD} per million tokens", n, a.Model))
			}
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("%s", strings.Join(probs, "\n"))
	}
	return nil
}

// AgentSpend is what one agent's calls used in a run.
type AgentSpend struct {
	Agent        string  `json:"agent"`
	Calls        int     `json:"calls"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	// PriceKnown is false when some call's model had no price (its cost
	// counts as 0).
	PriceKnown bool `json:"price_known"`
}

// Spend sums the run's model calls per agent (the one that answered), in
// plan order, from b's recordings.
func (s *Set) Spend(b *board.Board) []AgentSpend {
	by := map[string]*AgentSpend{}
	for _, r := range b.RecordingsKeyed() { // usage only: the text stays a key
		if r.Kind != KindLLM {
			continue
		}
		a := s.agents[r.Agent]
		resp, err := decodeUsage(r.Response)
		if a == nil || err != nil {
			continue
		}
		sp := by[r.Agent]
		if sp == nil {
			sp = &AgentSpend{Agent: r.Agent, PriceKnown: true}
			by[r.Agent] = sp
		}
		sp.Calls++
		sp.InputTokens += resp.Usage.InputTokens
		sp.OutputTokens += resp.Usage.OutputTokens
		switch cost, ok := recordedCost(a, resp); {
		case ok:
			sp.CostUSD += cost
		default:
			sp.PriceKnown = false
		}
	}
	var out []AgentSpend
	for _, n := range s.names {
		if sp := by[n]; sp != nil {
			sp.CostUSD = roundUSD(sp.CostUSD)
			out = append(out, *sp)
		}
	}
	return out
}

// recordedCost is what a recorded answer cost: as recorded, else at
// today's price of its model; ok is false when neither is known.
func recordedCost(a *Agent, resp *Response) (float64, bool) {
	if resp.Priced || resp.CostUSD > 0 {
		return resp.CostUSD, true
	}
	model := resp.Model
	if _, ok := priceFor(a, model); !ok {
		model = a.Model
	}
	p, ok := priceFor(a, model)
	return p.Cost(resp.Usage), ok
}

// roundUSD keeps costs readable and stable: to a millionth of a dollar.
func roundUSD(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// RunUsage is what a run's model calls used, summed from its recordings
// alone (no plan): `runner runs` shows it for every saved run.
type RunUsage struct {
	Calls        int     `json:"calls"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	// PriceKnown is false when some call carried no cost and its model
	// has no known price (that call counts as 0).
	PriceKnown bool `json:"price_known"`
}

// RecordedUsage sums the model calls among recs: each call's cost as
// recorded, else at its model's price.
func RecordedUsage(recs []board.Recording) RunUsage {
	u := RunUsage{PriceKnown: true}
	for _, r := range recs {
		if r.Kind != KindLLM {
			continue
		}
		resp, err := decodeUsage(r.Response)
		if err != nil {
			continue
		}
		u.Calls++
		u.InputTokens += resp.Usage.InputTokens
		u.OutputTokens += resp.Usage.OutputTokens
		if cost, ok := responseCost(resp); ok {
			u.CostUSD += cost
		} else {
			u.PriceKnown = false
		}
	}
	u.CostUSD = roundUSD(u.CostUSD)
	return u
}

// RecordingCost is what one recorded model call (a KindLLM recording)
// cost, read from the recording alone (no plan): its cost_usd as
// recorded, else at its model's built-in price; ok is false when neither
// is known or r is not a model call. The report shows it per call.
func RecordingCost(r board.Recording) (float64, bool) {
	if r.Kind != KindLLM {
		return 0, false
	}
	// Only what the cost needs: decoding the whole response would copy
	// the answer's text, 50 MB for a 50 MB answer, at the end of every
	// run.
	var resp struct {
		Usage   Usage   `json:"usage"`
		Model   string  `json:"model"`
		CostUSD float64 `json:"cost_usd"`
		Priced  bool    `json:"priced"`
	}
	if err := json.Unmarshal(r.Response, &resp); err != nil {
		return 0, false
	}
	return responseCost(&Response{Usage: resp.Usage, Model: resp.Model, CostUSD: resp.CostUSD, Priced: resp.Priced})
}

// responseCost is RecordedUsage's rule for one answer: the cost recorded
// with it (what the agent that answered cost, nothing for a script
// agent), else, for an answer recorded without one, its model's price.
func responseCost(resp *Response) (float64, bool) {
	switch p, ok := lookupPrice(resp.Model); {
	case resp.Priced || resp.CostUSD > 0:
		return resp.CostUSD, true
	case ok || resp.Model == "script":
		return p.Cost(resp.Usage), true
	}
	return 0, false
}

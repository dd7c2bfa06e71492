package agents

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
)

// Price is what a model costs, in US dollars per million tokens. Cached
// input (a prompt-cache hit) and cache writes have their own prices where
// the provider bills them differently; zero means the input price.
type Price struct {
	Input       float64 `json:"input" yaml:"input"`
	Output      float64 `json:"output" yaml:"output"`
	CachedInput float64 `json:"cached_input,omitempty" yaml:"cached_input"`
	CacheWrite  float64 `json:"cache_write,omitempty" yaml:"cache_write"`
	// MaxOutput is the most tokens the model may answer with (0: not
	// known); it bounds a call that sets no max_tokens.
	MaxOutput int `json:"max_output,omitempty" yaml:"max_output"`
	// A call with more than LongPromptTokens input tokens (0: no such
	// tier) costs LongPromptFactor times as much, every token of it.
	LongPromptTokens int     `json:"long_prompt_tokens,omitempty" yaml:"long_prompt_tokens"`
	LongPromptFactor float64 `json:"long_prompt_factor,omitempty" yaml:"long_prompt_factor"`
	// LongContext, when set, prices a call with more input tokens than
	// its Over at its own rates, every token of it (Gemini's dearer
	// prompts over 200k tokens).
	LongContext *LongContext `json:"long_context,omitempty" yaml:"long_context"`
}

// LongContext is a price tier for long prompts: the rates, in US dollars
// per million tokens, of a call with more than Over input tokens. A zero
// cache price means the tier's input price.
type LongContext struct {
	Over        int     `json:"over" yaml:"over"`
	Input       float64 `json:"input" yaml:"input"`
	Output      float64 `json:"output" yaml:"output"`
	CachedInput float64 `json:"cached_input,omitempty" yaml:"cached_input"`
	CacheWrite  float64 `json:"cache_write,omitempty" yaml:"cache_write"`
}

// tier is the price a call with usage u pays: the long-context tier's
// rates when its input is over the tier's threshold, else p's.
func (p Price) tier(u Usage) Price {
	lc := p.LongContext
	if lc == nil || u.InputTokens <= lc.Over {
		return p
	}
	t := p
	t.Input, t.Output, t.CachedInput, t.CacheWrite, t.LongContext = lc.Input, lc.Output, lc.CachedInput, lc.CacheWrite, nil
	return t
}

// priceList is the shape of prices.yaml and of a user's prices file.
type priceList struct {
	Date   string           `yaml:"date"`
	Models map[string]Price `yaml:"models"`
}

//go:embed prices.yaml
var builtinPrices []byte

// builtin is the built-in prices of well-known models (prices.yaml) and
// their date. A plan overrides them per agent with `price:`, a user for
// every plan with a prices file (UsePricesFile). They are read when first
// asked for, not as every runner command starts.
var builtin = sync.OnceValue(func() *priceList {
	l, err := parsePrices(builtinPrices)
	if err != nil {
		panic("agents: prices.yaml: " + err.Error())
	}
	return l
})

// PricesDate is the day the built-in prices were last checked.
func PricesDate() string { return builtin().Date }

func parsePrices(data []byte) (*priceList, error) {
	var l priceList
	d := yaml.NewDecoder(bytes.NewReader(data))
	d.KnownFields(true)
	if err := d.Decode(&l); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	for name, p := range l.Models {
		if p.Input < 0 || p.Output < 0 || p.CachedInput < 0 || p.CacheWrite < 0 || p.LongPromptFactor < 0 {
			return nil, fmt.Errorf("model %s: a price must not be negative", name)
		}
		if p.Input == 0 && p.Output == 0 {
			return nil, fmt.Errorf("model %s: needs input and output (US dollars per million tokens)", name)
		}
		if lc := p.LongContext; lc != nil {
			switch {
			case lc.Over <= 0:
				return nil, fmt.Errorf("model %s: long_context needs over, the input tokens above which its prices apply", name)
			case lc.Input < 0 || lc.Output < 0 || lc.CachedInput < 0 || lc.CacheWrite < 0:
				return nil, fmt.Errorf("model %s: long_context: a price must not be negative", name)
			case lc.Input == 0 && lc.Output == 0:
				return nil, fmt.Errorf("model %s: long_context needs input and output (US dollars per million tokens)", name)
			}
		}
	}
	return &l, nil
}

// userPrices are the prices file's models (UsePricesFile), and where it is.
var userPrices struct {
	sync.RWMutex
	models map[string]Price
	path   string
}

// DefaultPricesFile is where a user's prices file is: runner/prices.yaml
// in the user's config directory ("" when there is none).
func DefaultPricesFile() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "runner", "prices.yaml")
}

// PricesFilePath is the prices file a process uses: $RUNNER_PRICES when
// set, else DefaultPricesFile.
func PricesFilePath(getenv func(string) string) string {
	if p := getenv("RUNNER_PRICES"); p != "" {
		return p
	}
	return DefaultPricesFile()
}

// UseUserPrices reads the user's prices file (PricesFilePath) for the
// rest of the process: every command that builds agents (runner,
// runner-temporal's worker and run) starts with it, so a model priced
// there is priced alike wherever a plan's steps run.
func UseUserPrices(getenv func(string) string) error {
	return UsePricesFile(PricesFilePath(getenv))
}

// UsePricesFile reads a prices file (prices.yaml's shape) whose models
// add to and override the built-in prices for the rest of the process. A
// file that does not exist is no error: there are then no user prices.
func UsePricesFile(path string) error {
	userPrices.Lock()
	defer userPrices.Unlock()
	userPrices.models, userPrices.path = nil, path
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("prices file: %w", err)
	}
	l, err := parsePrices(data)
	if err != nil {
		return fmt.Errorf("prices file %s: %w", path, err)
	}
	models := make(map[string]Price, len(l.Models))
	for name, p := range l.Models {
		models[strings.ToLower(name)] = p
	}
	userPrices.models = models
	return nil
}

// pricesFile is the prices file named in messages: the one in use, else
// where it would be.
func pricesFile() string {
	userPrices.RLock()
	defer userPrices.RUnlock()
	if userPrices.path != "" {
		return userPrices.path
	}
	return DefaultPricesFile()
}

// priceFor is the price of a call by agent a to model: the plan's
// override, else the prices file's and the built-in table; ok is false
// when none knows it. Script agents cost nothing unless the plan gives
// them a price. An anthropic agent's price without cache prices takes
// Anthropic's rule: reads a tenth of input, writes 1.25 times.
func priceFor(a *Agent, model string) (Price, bool) {
	if p := a.Spec.Price; p != nil {
		out := Price{Input: p.Input, Output: p.Output}
		if a.Provider == "anthropic" {
			out.CachedInput, out.CacheWrite = p.Input/10, p.Input*1.25
		}
		if p.CachedInput != nil {
			out.CachedInput = *p.CachedInput
		}
		if p.CacheWrite != nil {
			out.CacheWrite = *p.CacheWrite
		}
		if known, ok := lookupPrice(model); ok {
			out.MaxOutput = known.MaxOutput
		}
		return out, true
	}
	if a.Provider == "script" {
		return Price{}, true
	}
	return lookupPrice(model)
}

// lookupPrice finds a model in the prices file's models, then in builtin:
// exactly, or by the longest name it starts with (followed by '-' or the
// end, so gpt-4o does not take o4's).
func lookupPrice(model string) (Price, bool) {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:] // openrouter-style "openai/gpt-4o"
	}
	userPrices.RLock()
	user := userPrices.models
	userPrices.RUnlock()
	for _, table := range []map[string]Price{user, builtin().Models} {
		if p, ok := matchPrice(table, m); ok {
			return p, true
		}
	}
	return Price{}, false
}

func matchPrice(table map[string]Price, m string) (Price, bool) {
	if p, ok := table[m]; ok {
		return p, true
	}
	best := ""
	for name := range table {
		if len(name) > len(best) && strings.HasPrefix(m, name) && (len(m) == len(name) || m[len(name)] == '-' || m[len(name)] == '@') {
			best = name
		}
	}
	p, ok := table[best]
	return p, ok && best != ""
}

// Cost is what usage costs at price p, in US dollars. Usage.InputTokens
// counts cached and cache-write tokens too; they are billed at their own
// prices. Reasoning tokens are part of OutputTokens and billed as output,
// as every provider bills them. A long prompt pays its tier's rates.
func (p Price) Cost(u Usage) float64 {
	p = p.tier(u)
	cached, write := p.CachedInput, p.CacheWrite
	if cached == 0 {
		cached = p.Input
	}
	if write == 0 {
		write = p.Input
	}
	plain := max(u.InputTokens-u.CacheReadInputTokens-u.CacheCreationInputTokens, 0)
	cost := (float64(plain)*p.Input + float64(u.CacheReadInputTokens)*cached +
		float64(u.CacheCreationInputTokens)*write + float64(u.OutputTokens)*p.Output) / 1e6
	if p.LongPromptTokens > 0 && u.InputTokens > p.LongPromptTokens && p.LongPromptFactor > 0 {
		cost *= p.LongPromptFactor
	}
	return cost
}

// callCost is what a finished call cost: at the agent's price for the
// model that answered (or was asked, when the answer names none), nothing
// for a script agent; ok is false when the price is not known.
func callCost(a *Agent, req *Request, resp *Response) (cost float64, ok bool) {
	if a.Provider == "a2a" {
		return 0, true // a remote agent's own costs are not the run's to price
	}
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
		return DefaultAnthropicMaxTokens + req.Thinking, true
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
		req := &Request{Model: a.Model, MaxTokens: a.Spec.MaxTokens, Thinking: a.Spec.Thinking}
		if _, ok := outputCap(a, req); !ok {
			probs = append(probs, fmt.Sprintf("agent %s: %s needs max_tokens on this agent: the most model %q may answer is not known, so its calls could not be checked against the limit", n, limit, a.Model))
		}
		if plan.Limits.MaxCostUSD > 0 {
			if _, ok := priceFor(a, a.Model); !ok {
				probs = append(probs, unknownPrice(n, a.Model))
			}
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("%s", strings.Join(probs, "\n"))
	}
	return nil
}

// unknownPrice says that agent name's model has no known price, with the
// lines that would give it one.
func unknownPrice(name, model string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "agent %s: limits.max_cost_usd needs the price of model %q, which runner's prices (of %s) do not have; add it, in US dollars per million tokens, to the agent in the plan:\n", name, model, builtin().Date)
	fmt.Fprintf(&b, "    agents:\n      %s:\n        price: {input: USD, output: USD}\n", name)
	if f := pricesFile(); f != "" {
		fmt.Fprintf(&b, "  or, for every plan, to %s:\n", f)
		fmt.Fprintf(&b, "    models:\n      %s: {input: USD, output: USD}", yamlKey(strings.ToLower(model)))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// yamlKey is s as a YAML mapping key, quoted when it would not read back
// as itself.
func yamlKey(s string) string {
	var probe map[string]any
	if yaml.Unmarshal([]byte(s+": 1"), &probe) == nil && len(probe) == 1 {
		if _, ok := probe[s]; ok {
			return s
		}
	}
	q, _ := json.Marshal(s)
	return string(q)
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
	// Prompt caching: input tokens read from and written to the
	// provider's cache (counted in InputTokens too), and what that saved
	// against paying full input price for them (less than 0: the writes
	// cost more than the reads saved).
	CacheReadTokens  int     `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int     `json:"cache_write_tokens,omitempty"`
	CacheSavedUSD    float64 `json:"cache_saved_usd,omitempty"`
	// ReasoningTokens are the output tokens spent reasoning (counted in
	// OutputTokens too, and billed as output).
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
}

// CacheSaved is what prompt caching saved on usage u at price p: the
// cached reads and writes at the input price, less what they cost.
func (p Price) CacheSaved(u Usage) float64 {
	full := u
	full.CacheReadInputTokens, full.CacheCreationInputTokens = 0, 0
	return p.Cost(full) - p.Cost(u)
}

// Spend sums the run's model calls per agent (the one that answered), in
// plan order, from b's recordings.
func (s *Set) Spend(b *board.Board) []AgentSpend {
	by := map[string]*AgentSpend{}
	for _, r := range b.RecordingsKeyed() { // usage only: the text stays a key
		if !IsModelCall(r) {
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
		sp.CacheReadTokens += resp.Usage.CacheReadInputTokens
		sp.CacheWriteTokens += resp.Usage.CacheCreationInputTokens
		sp.ReasoningTokens += resp.Usage.ReasoningTokens
		if resp.Usage.CacheReadInputTokens+resp.Usage.CacheCreationInputTokens > 0 {
			model := resp.Model
			if _, ok := priceFor(a, model); !ok {
				model = a.Model
			}
			if p, ok := priceFor(a, model); ok {
				sp.CacheSavedUSD += p.CacheSaved(resp.Usage)
			}
		}
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
			sp.CostUSD, sp.CacheSavedUSD = roundUSD(sp.CostUSD), roundUSD(sp.CacheSavedUSD)
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
		if !IsModelCall(r) {
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
	if !IsModelCall(r) {
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

// RecordingCacheSaved is what prompt caching saved on one recorded model
// call, at its model's price (the prices file's or the built-in one);
// ok is false when that price is not known.
func RecordingCacheSaved(r board.Recording) (float64, bool) {
	var resp struct {
		Usage Usage  `json:"usage"`
		Model string `json:"model"`
	}
	if !IsModelCall(r) || json.Unmarshal(r.Response, &resp) != nil {
		return 0, false
	}
	p, ok := lookupPrice(resp.Model)
	if !ok {
		return 0, false
	}
	return p.CacheSaved(resp.Usage), true
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

// batchPrice is a model's price through its provider's batch API: half
// the ordinary price at OpenAI and at Anthropic, every kind of token.
func batchPrice(a *Agent, model string) (Price, bool) {
	const discount = 0.5
	p, ok := priceFor(a, model)
	p.Input, p.Output = p.Input*discount, p.Output*discount
	p.CachedInput, p.CacheWrite = p.CachedInput*discount, p.CacheWrite*discount
	return p, ok
}

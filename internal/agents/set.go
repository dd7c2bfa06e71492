package agents

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/budget"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/sys/mask"
	"github.com/rs/zerolog"
)

// DefaultTimeout bounds one model call when the agent sets no timeout.
const DefaultTimeout = 10 * time.Minute

// Options tune a Set. The zero value is what a run uses.
type Options struct {
	// HTTPClient makes the providers' requests; nil: a client without a
	// global timeout (each call has its own, the agent's timeout).
	HTTPClient *http.Client
	// Getenv reads API keys; nil: os.Getenv.
	Getenv func(string) string
	// Log receives retries and per-call summaries; the zero Logger is silent.
	Log zerolog.Logger
	// Retry is the retry policy of HTTP providers (zero fields: DefaultRetry).
	Retry Retry
	// Sleep waits between retries; nil: a real timer. Tests make it instant.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a number in [0,1) for retry backoff; nil: math/rand.
	Jitter func() float64
	// Replay, when set, answers every call from recordings instead of the
	// providers: no network, and API keys are not needed. A call whose
	// request differs from the recording, or that has no recording, fails
	// with a *Divergence.
	Replay ReplaySource
	// Reuse, when set, answers calls from earlier runs' recordings while
	// their requests match (see Reuse); the rest go to the providers.
	Reuse *Reuse
	// OnStream, when set, receives the text of streamed answers
	// (agents with stream: true) as it comes, masked, for a display. A
	// call retried after its stream broke sends its text again from the
	// start.
	OnStream func(StreamChunk)
	// Mask, when set, learns every agent's API key, and masks the run's
	// secrets in what providers answer and in the requests recordings
	// keep; nil: each provider masks its own key.
	Mask *mask.Masker
	// Budgets are spending limits shared by every run on the machine
	// beside the plan's own (the user's config); they are checked against
	// Ledger, or, when it is nil and some budget applies, the ledger in
	// budget.Dir. A replay spends nothing and checks none.
	Budgets []plans.Budget
	Ledger  *budget.Ledger
	// RunID is the run the ledger's records name.
	RunID string
}

// StreamChunk is a piece of a streamed answer: the call it belongs to
// and its text.
type StreamChunk struct {
	Agent string
	Label string
	Visit int
	Call  int
	Text  string
}

// ReplaySource serves recorded model exchanges to a replay.
type ReplaySource interface {
	// Recording returns the recording of the call-th model call of a step
	// visit.
	Recording(label string, visit, call int) (board.Recording, bool)
}

// ForkSource is a ReplaySource that hands a run over to the real providers
// from some step visit on (runner replay --from): calls of a live visit go
// to the network, with the agent's LiveModel if one is set.
type ForkSource interface {
	ReplaySource
	Live(label string, visit int) bool
}

// FromRecordings is a ReplaySource over a saved run's recordings (those of
// kind "llm", and, as a ToolReplaySource, those of kind "mcp"; the first
// one wins if a (kind, label, visit, call) repeats). They may be keyed
// (board.RecordingsKeyed): each is built whole when it is served, so a
// replay does not hold every large answer of the run as JSON for its
// whole length.
func FromRecordings(recs []board.Recording) ReplaySource {
	m := recordings{}
	for _, r := range recs {
		k := callKey{r.Kind, r.Label, r.Visit, r.Call}
		if _, dup := m[k]; !dup && (r.Kind == KindLLM || r.Kind == KindMCP || r.Kind == KindTool || r.Kind == KindCodingAgent || r.Kind == KindBudget) {
			m[k] = r
		}
	}
	return m
}

// KindLLM is the Kind of the recordings this package makes.
const KindLLM = "llm"

type callKey struct {
	kind  string
	label string
	visit int
	call  int
}

type recordings map[callKey]board.Recording

func (m recordings) Recording(label string, visit, call int) (board.Recording, bool) {
	r, ok := m[callKey{KindLLM, label, visit, call}]
	return r, ok // keyed, perhaps: decodeRecorded reads it
}

// ToolRecording returns the recording of the n-th tool exchange of a step
// visit: with an MCP server, or a call of a tool the plan defines (the
// two are numbered in one sequence).
func (m recordings) ToolRecording(label string, visit, n int) (board.Recording, bool) {
	if r, ok := m[callKey{KindMCP, label, visit, n}]; ok {
		return r.Whole(), ok
	}
	r, ok := m[callKey{KindTool, label, visit, n}]
	return r.Whole(), ok
}

// Agent is a plan's agent, ready to call.
type Agent struct {
	Name     string
	Provider string
	Model    string
	System   string
	Timeout  time.Duration // per call
	Spec     *plans.Agent
	// LiveModel, when set, replaces Model for the live calls of a fork
	// (runner replay --from --agent NAME.model=...).
	LiveModel string
	p         provider
}

// provider answers one request. It returns the number of retries it made,
// also on failure.
type provider interface {
	complete(ctx context.Context, c *callInfo, req *Request) (*Response, int, error)
}

// callInfo says which call a provider is answering.
type callInfo struct {
	label string
	visit int
	call  int
	log   zerolog.Logger
	// delta receives a streamed answer's text as it comes (nil: no one
	// watches).
	delta func(text string)
}

// Set is a plan's agents and the run-wide state of their calls: the token
// count against limits.max_tokens and the call numbers of each step visit.
// It is safe for concurrent use by parallel steps.
type Set struct {
	// spawned counts the run's sub-agents (spawn.go).
	spawnMu sync.Mutex
	spawned int

	agents    map[string]*Agent
	names     []string
	maxTokens int
	log       zerolog.Logger
	replay    ReplaySource
	reuse     *Reuse
	mask      *mask.Masker
	onStream  func(StreamChunk)

	maxCost float64

	// The budgets shared with other runs (budgets:), the ledger they are
	// kept in (nil: none apply), and the names the run's calls count
	// under.
	budgets  []plans.Budget
	ledger   *budget.Ledger
	runID    string
	planName string
	raised   float64 // Raise: beyond the budgets, for this run
	onExceed string  // the plan's budgets.on_exceed

	getenv  func(string) string // reads the secrets MCP servers get
	servers servers             // MCP servers of scope run

	mu    sync.Mutex
	bound *board.Board // the board the counters below were read from
	used  int          // tokens used by the run so far
	spent float64      // US dollars spent by the run so far
	calls map[visitKey]int
	// The most the calls under way could still spend: a call reserves its
	// worst case before it starts, so parallel calls cannot together
	// cross a limit either.
	heldTokens int
	heldUSD    float64
	// memBusy: the visit using each memory agent's conversation now.
	memBusy map[string]visitKey

	memMu    sync.Mutex
	memCache map[memoryKey][]Message  // memory.go: visits decoded
	memRefs  map[memoryKey]*MemoryRef // memory.go: whose memory each call sent
	// resumed: answers of a lost attempt's calls (Resume).
	resumed map[callKey]board.Recording
}

// hold is one call's reservation against the run's limits.
type hold struct {
	tokens int
	usd    float64
	led    *budget.Hold // in the shared ledger; nil: no budget applies
}

type visitKey struct {
	label string
	visit int
}

// New checks and prepares a plan's agents: it fails, naming the agent and
// the variable, when an API key is missing, and loads script responses
// files. runs calls it before the first step runs.
func New(plan *plans.Plan, opt Options) (*Set, error) {
	getenv := opt.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	client := opt.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	t := &transport{client: client, retry: opt.Retry.withDefaults(), sleep: opt.Sleep, jitter: opt.Jitter}
	if t.sleep == nil {
		t.sleep = sleepCtx
	}
	if t.jitter == nil {
		t.jitter = defaultJitter
	}
	s := &Set{agents: map[string]*Agent{}, maxTokens: plan.Limits.MaxTokens, maxCost: plan.Limits.MaxCostUSD, log: opt.Log,
		replay: opt.Replay, reuse: opt.Reuse, calls: map[visitKey]int{}, mask: opt.Mask, getenv: getenv,
		onStream: opt.OnStream, onExceed: plan.Budgets.OnExceed}
	var errs []error
	for _, spec := range plan.Agents {
		a := &Agent{Name: spec.Name, Provider: spec.Provider, Model: spec.Model, System: spec.System,
			Timeout: spec.Timeout, Spec: spec}
		if a.Timeout <= 0 {
			a.Timeout = DefaultTimeout
		}
		_, fork := opt.Replay.(ForkSource)
		p, err := newProvider(plan, a, t, getenv, opt.Replay != nil && !fork, opt.Mask)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		a.p = p
		s.agents[a.Name] = a
		s.names = append(s.names, a.Name)
	}
	if s.mask == nil {
		s.mask = mask.New() // for the secrets MCP servers get
	}
	if len(errs) == 0 {
		if err := checkLimits(plan, s.agents); err != nil {
			errs = append(errs, err)
		}
	}
	if _, fork := opt.Replay.(ForkSource); opt.Replay == nil || fork {
		s.useBudgets(plan, opt, getenv)
		if len(errs) == 0 {
			if err := checkBudgets(s.budgets, s.planName, s.agents); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

func newProvider(plan *plans.Plan, a *Agent, t *transport, getenv func(string) string, replay bool, m *mask.Masker) (provider, error) {
	switch a.Provider {
	case "script":
		load := func() ([]plans.Response, error) { return a.Spec.Responses, nil }
		if f := a.Spec.ResponsesFile; f != "" {
			load = func() ([]plans.Response, error) {
				responses, err := plans.LoadResponsesFile(plan.Path, f)
				if err != nil {
					return nil, fmt.Errorf("agent %s: responses file %s: %w", a.Name, f, err)
				}
				return responses, nil
			}
		}
		return newScript(a, load, !replay)
	case "a2a":
		if v := a.Spec.APIKeyEnv; v != "" && !replay && strings.TrimSpace(getenv(v)) == "" {
			return nil, fmt.Errorf("agent %s: %s is not set: the agent's api_key_env names it for the token sent to the A2A agent", a.Name, v)
		}
		return newRemoteAgent(a, t, getenv, m)
	case "openai", "anthropic":
	default:
		return nil, fmt.Errorf("agent %s: unknown provider %q (one of %s)", a.Name, a.Provider, strings.Join(plans.Providers, ", "))
	}
	def, envVar := DefaultOpenAIBaseURL, "OPENAI_API_KEY"
	if a.Provider == "anthropic" {
		def, envVar = DefaultAnthropicBaseURL, "ANTHROPIC_API_KEY"
	}
	if a.Spec.APIKeyEnv != "" {
		envVar = a.Spec.APIKeyEnv
	}
	base, err := baseURL(a, def)
	if err != nil {
		return nil, err
	}
	key := strings.TrimSpace(getenv(envVar))
	if key == "" && !replay {
		return nil, fmt.Errorf("agent %s: %s is not set: the %s provider needs an API key in it (for a local server that wants none, set it to any value)",
			a.Name, envVar, a.Provider)
	}
	if m == nil {
		m = mask.New()
	}
	m.Add(key)
	if a.Provider == "anthropic" {
		return &anthropic{t: t, agent: a, baseURL: base, key: key, mask: m}, nil
	}
	return &openAI{t: t, agent: a, baseURL: base, key: key, mask: m}, nil
}

// baseURL checks the agent's base_url (or takes the default) and drops a
// trailing slash, so that appending the API path gives one slash.
func baseURL(a *Agent, def string) (string, error) {
	raw := a.Spec.BaseURL
	if raw == "" {
		return def, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("agent %s: base_url %q is not an http(s) URL", a.Name, raw)
	}
	return strings.TrimRight(raw, "/"), nil
}

// Agent returns the agent named name.
func (s *Set) Agent(name string) (*Agent, bool) {
	a, ok := s.agents[name]
	return a, ok
}

// Names lists the agents in plan order.
func (s *Set) Names() []string { return append([]string(nil), s.names...) }

// Used is the number of tokens the run's model calls have used so far.
func (s *Set) Used() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}

// bind makes b the board whose history the run-wide counters continue: on
// the first call against a board (a fresh run, or a resumed one), the
// tokens used, the call numbers of each visit and the script agents' place
// in their answers are read back from b's recordings. Callers hold s.mu.
func (s *Set) bindLocked(b *board.Board) {
	if b == s.bound {
		return
	}
	s.bound, s.used, s.spent, s.calls = b, 0, 0, map[visitKey]int{}
	for _, a := range s.agents {
		if sc, ok := a.p.(*script); ok {
			sc.reset()
		}
	}
	if b == nil {
		return
	}
	s.spawnMu.Lock()
	s.spawned = 0
	for st := range b.StepsBrief() {
		if st.Spawned() {
			s.spawned = max(s.spawned, spawnNumber(st.Label))
		}
	}
	defer s.spawnMu.Unlock()
	for _, r := range b.RecordingsKeyed() { // usage only: the text stays a key
		s.spawned = max(s.spawned, spawnNumber(r.Label))
		if r.Kind == KindCodingAgent {
			// A coding agent's model exchanges, metered by its proxy,
			// count toward the run's limits as the set's own calls do.
			if u, cost, ok := codingSpend(s.agents[r.Agent], r); ok {
				s.used += u.Total()
				s.spent += cost
			}
			continue
		}
		if r.Kind != KindLLM {
			continue
		}
		if resp, err := decodeUsage(r.Response); err == nil {
			s.used += resp.Usage.Total()
			if a := s.agents[r.Agent]; a != nil {
				cost, _ := recordedCost(a, resp)
				s.spent += cost
			}
		}
		k := visitKey{r.Label, r.Visit}
		s.calls[k] = max(s.calls[k], r.Call)
		if a := s.agents[r.Agent]; a != nil {
			if sc, ok := a.p.(*script); ok {
				sc.take(r.Label, r.Visit)
			}
		}
	}
}

// begin checks the run's limits against the most the call could spend
// (its input, estimated, and its largest answer), holds that much until
// the call ends, and returns the number the call gets within its step
// visit. The number is taken only when the call succeeds (see done): a
// call that failed (a dropped connection, then a step retry) leaves no
// recording, so its successor must take its number for a replay to line
// up.
func (s *Set) begin(b *board.Board, label string, visit int, a *Agent, req *Request) (int, hold, error) {
	call, h, err := s.beginRun(b, label, visit, a, req)
	if err != nil {
		return call, h, err
	}
	if ex, ok := s.replayedRefusal(label, visit, call); ok {
		s.release(h)
		return 0, hold{}, &BudgetError{Shared: ex, Agent: a.Name, Model: req.Model, Call: call}
	}
	if s.ledger == nil {
		return call, h, nil
	}
	c := budget.Charge{Run: s.runID, Plan: s.planName, Agent: a.Name, Model: req.Model, USD: h.usd, Tokens: h.tokens}
	led, err := s.ledger.Reserve(s.budgets, c, holdTTL(a), s.Raised())
	if err != nil {
		s.release(h)
		var ex *budget.ExceededError
		if errors.As(err, &ex) {
			return 0, hold{}, &BudgetError{Shared: ex, Agent: a.Name, Model: req.Model, Call: call}
		}
		return 0, hold{}, err
	}
	h.led = led
	return call, h, nil
}

// beginRun is begin against the run's own limits.
func (s *Set) beginRun(b *board.Board, label string, visit int, a *Agent, req *Request) (int, hold, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bindLocked(b)
	if err := s.spentLocked(); err != nil {
		return 0, hold{}, err
	}
	in := inputEstimate(req)
	out, _ := outputCap(a, req)
	h := hold{tokens: in + out}
	if s.maxTokens > 0 && s.used+s.heldTokens+h.tokens > s.maxTokens {
		return 0, hold{}, &BudgetError{Limit: s.maxTokens, Used: s.used + s.heldTokens, Held: s.heldTokens, Agent: a.Name, Model: req.Model, Input: in, Output: out}
	}
	if p, ok := priceFor(a, req.Model); ok {
		h.usd = p.Cost(Usage{InputTokens: in, OutputTokens: out})
	}
	if s.maxCost > 0 && s.spent+s.heldUSD+h.usd > s.maxCost {
		return 0, hold{}, &BudgetError{LimitUSD: s.maxCost, SpentUSD: s.spent + s.heldUSD, NextUSD: h.usd, Agent: a.Name, Model: req.Model, Input: in, Output: out}
	}
	s.heldTokens += h.tokens
	s.heldUSD += h.usd
	return s.calls[visitKey{label, visit}] + 1, h, nil
}

// spentLocked is the error for a limit the run has reached.
func (s *Set) spentLocked() error {
	if s.maxTokens > 0 && s.used+s.heldTokens >= s.maxTokens {
		return &BudgetError{Limit: s.maxTokens, Used: s.used + s.heldTokens}
	}
	if s.maxCost > 0 && s.spent+s.heldUSD >= s.maxCost {
		return &BudgetError{LimitUSD: s.maxCost, SpentUSD: s.spent + s.heldUSD}
	}
	return nil
}

// CheckBudget fails with a *BudgetError when the run's model calls have
// reached a limit.
func (s *Set) CheckBudget(b *board.Board) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bindLocked(b)
	return s.spentLocked()
}

// release ends a call's hold without counting anything (the call failed).
func (s *Set) release(h hold) {
	if err := h.led.Release(); err != nil {
		s.log.Warn().Err(err).Msg("budget ledger: a failed call's hold stays until it expires")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heldTokens -= h.tokens
	s.heldUSD -= h.usd
}

// done counts a successful call: its number, its tokens and its cost, in
// place of its hold.
func (s *Set) done(label string, visit, call int, u Usage, cost float64, h hold) {
	if err := h.led.Settle(cost, u.Total()); err != nil {
		s.log.Warn().Err(err).Msg("budget ledger: a call's real cost was not written; its hold counts until it expires")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := visitKey{label, visit}
	s.calls[k] = max(s.calls[k], call)
	s.used += u.Total()
	s.spent += cost
	s.heldTokens -= h.tokens
	s.heldUSD -= h.usd
}

// Spent is what the run's model calls have cost so far, in US dollars.
func (s *Set) Spent() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spent
}

// unknownAgent is the error for a name that is not an agent of the plan.
func (s *Set) unknownAgent(name string) error {
	names := append([]string(nil), s.names...)
	sort.Strings(names)
	return errors.New(plans.UnknownAgent(name, names))
}

// masked is a canonical request with the run's secrets masked, and its
// sha256: a recording keeps no secret, and a replay, whose requests are
// built from masked results, still matches it.
func (s *Set) masked(canon []byte, sum string) ([]byte, string) {
	m := s.mask.Bytes(canon)
	if len(m) == len(canon) && string(m) == string(canon) {
		return canon, sum
	}
	h := sha256.Sum256(m)
	return m, hex.EncodeToString(h[:])
}

package plans

import (
	"time"

	"gopkg.in/yaml.v3"
)

// Plan is a loaded, structurally checked plan. Step types' own fields stay
// in each Step's Node, for the engine's type decoders.
type Plan struct {
	Path        string
	Source      string // the file as read; a step's strings are parts of it
	SHA256      string
	Version     int
	Name        string
	Description string
	Vars        []Var
	Env         []EnvVar
	Secrets     []string // names of environment variables whose values are secret (see secrets.go)
	Agents      []*Agent
	Limits      Limits
	Board       BoardOptions
	Steps       []*Step // top level, in order
	// Outputs are what a call of this plan gives back (see call.go).
	Outputs []Output
	// Tools are the tools the plan defines for its agents (tools.go).
	Tools []*Tool
	// Notify are where the run says that an input waits, that it failed
	// or that it ended (internal/notify).
	Notify []*Notify
	// Budgets limit what runs on this machine spend together (budget.go).
	Budgets Budgets

	labels map[string]*Step
	lookup func(string) *Step // set by LookupWith: it replaces labels
	load   *loadState
	// numbered: how many steps numberSteps numbered.
	numbered int32
	// runOnly are the keys of fields that belong to the run (env,
	// secrets, limits, board): refused in a called plan.
	runOnly []*yaml.Node
	calls   []pendingCall
}

// pendingCall is a call step whose callee is loaded once the whole
// caller is read (its agents may come after its steps).
type pendingCall struct {
	step *Step
	has  fieldMap
}

// Var is a plan input; its default's type is the var's type.
type Var struct {
	Name    string
	Default any
	Node    *yaml.Node
}

// EnvVar is one entry of the plan's env block.
type EnvVar struct {
	Name  string
	Value string
	Node  *yaml.Node
}

// Limits bound a whole run.
type Limits struct {
	MaxSteps  int           // default 1000
	Timeout   time.Duration // 0: none
	MaxTokens int           // 0: none
	// MaxCostUSD bounds what the run's model calls may cost, in US
	// dollars (0: none).
	MaxCostUSD float64
}

// DefaultMaxSteps is limits.max_steps when the plan does not say.
const DefaultMaxSteps = 1000

// DefaultForEachConcurrency is a for_each step's max_concurrency when it
// does not say: a list of 10,000 files must not start 10,000 processes at
// once (and 10,000 visits at once cost half again the memory of a few).
const DefaultForEachConcurrency = 8

// DefaultMaxVisits is a step's max_visits when it does not say.
const DefaultMaxVisits = 10

// Expr is an expression's source and where it stands in the file.
type Expr struct {
	Src  string
	Node *yaml.Node
}

// Step is one step. Common fields are decoded here; the rest belongs to the
// step's type.
type Step struct {
	Label           string
	Type            string // "" for a parallel group
	Node            *yaml.Node
	TypeNode        *yaml.Node
	If              *Expr
	Timeout         time.Duration
	Retry           *Retry
	ContinueOnError bool
	// Ord is the step's place among the plan's labeled steps, from 1, in
	// the order AllSteps gives them; 0 for a step not numbered (no label,
	// or made other than by parsing a plan). A run keeps what it has of
	// each step by it rather than in maps by label (10 MB at 100k steps).
	Ord       int32
	MaxVisits int
	Write     *Write

	// *StepMore holds what groups, sequences, for_each and plan calls
	// have; every other step shares one (plainStep), so a plan of 100,000
	// commands does not carry 100,000 empty copies. Write through Own.
	*StepMore
	Parent *Step
	Index  int // position among its siblings
	Line   int // the line its mapping starts on
	// text is where a top-level step is in the plan's text when
	// ParseLean let go of its YAML (LetGo).
	text textSpan
}

// StepMore is the part of a step few steps use.
type StepMore struct {
	Parallel []*Step
	// Steps, for a child of a parallel group, make it a sequence: these
	// steps run in order, a goto staying among them (Sequence is set).
	Steps    []*Step
	Sequence bool
	// Needs, on a child of a parallel group, are the siblings it waits
	// for: the group is then a DAG (see checkNeeds).
	Needs     []string
	NeedsNode *yaml.Node
	// ForEach runs the step once per item of the list it gives (item and
	// index in scope); MaxConcurrency and FailFast apply to the items.
	ForEach        *Expr
	MaxConcurrency int  // 0: all at once
	FailFast       bool // default true
	// Call is set on a `type: plan` step: the plan it runs (call.go).
	Call *Call
}

// plainStep is the StepMore of every step without one of its own: never
// written (a test checks).
var plainStep = &StepMore{FailFast: true}

// NewStep is an empty step of a type, as the plan would give it with
// only its label and type.
func NewStep(label, typ string) *Step {
	return &Step{Label: label, Type: typ, MaxVisits: DefaultMaxVisits, StepMore: plainStep}
}

// Own is the step's own StepMore, made when it shared plainStep.
func (s *Step) Own() *StepMore {
	if s.StepMore == plainStep || s.StepMore == nil {
		m := *plainStep
		if s.StepMore == nil {
			m = StepMore{}
		}
		s.StepMore = &m
	}
	return s.StepMore
}

// Copy is a copy of the step that can be changed without changing it:
// its StepMore is its own too.
func (s *Step) Copy() *Step {
	c := *s
	if c.StepMore != plainStep && c.StepMore != nil {
		m := *c.StepMore
		c.StepMore = &m
	}
	return &c
}

// textSpan is a run of whole lines of a plan's text: from off to end
// (bytes), the first being line. A plan's text is read whole, far under
// 2 GiB (readlimit.Plan).
type textSpan struct{ off, end, line int32 }

// Retry re-runs a failing step.
type Retry struct {
	Max        int // attempts after the first
	Backoff    time.Duration
	MaxBackoff time.Duration
	Until      *Expr
	Node       *yaml.Node
}

// Write says where a step's result goes on the board.
type Write struct {
	Section string
	Key     string // may hold ${{ }}
	KeyNode *yaml.Node
	TTL     time.Duration
}

// Agent is an entry of the plan's agents block (docs/spec.md §4).
type Agent struct {
	Name        string
	Provider    string
	Model       string
	System      string
	Temperature *float64
	MaxTokens   int
	Seed        *int
	BaseURL     string
	APIKeyEnv   string
	Timeout     time.Duration
	// Responses are the script provider's canned answers: in order, or,
	// when Label is set, for that step label (in order within it).
	Responses     []Response
	ResponsesFile string // a YAML/JSON file of responses, relative to the plan
	Board         AgentBoard
	// Subscribe lists the board topics the agent sees (empty: all).
	Subscribe []string
	// Fallback lists the agents that take over, in order, when a call to
	// this one fails with a provider error retries did not cure.
	Fallback []string
	// Spawns lists the agents this one may start at run time through the
	// spawn_agent tool (an llm step's tools: [spawn]).
	Spawns     []string
	SpawnsNode *yaml.Node
	// Price overrides the built-in price of the agent's model.
	Price *Price
	// Stream: the answer comes as server-sent events, shown as it comes;
	// the recording holds the whole answer either way.
	Stream bool
	// Thinking is the token budget of extended thinking (anthropic; 0:
	// off).
	Thinking int
	// MCP lists the MCP servers whose tools the agent may use.
	MCP []*MCPServer
	// Tools are SERVER.TOOL patterns (path.Match): the MCP tools the agent
	// may use. None by default: a server's tools are offered only when
	// named. A pattern without a dot names tools the plan defines
	// (Plan.Tools).
	Tools     []string
	ToolsNode *yaml.Node
	// Approve are tool patterns (as Tools: SERVER.TOOL for MCP tools, a
	// name without a dot for tools the plan defines and board tools)
	// whose every call waits for a person to allow it;
	// ApproveAnswerers, when set, are who may.
	Approve          []string
	ApproveAnswerers []string
	// Memory, when on, keeps the agent's earlier turns in the run across
	// its step visits (memory.go); nil: off.
	Memory *AgentMemory
	// API is the openai provider's wire API: APIResponses or APIChat; ""
	// picks by base_url (OpenAI's own API: responses, any other server:
	// chat).
	API string
	// ReasoningEffort is a reasoning model's effort (openai); "": the
	// model's default.
	ReasoningEffort string
	// PromptCacheKey groups calls that share a prompt prefix for the
	// provider's prompt cache (openai's prompt_cache_key).
	PromptCacheKey string
	// Batch is the plan's default for the llm steps with for_each that
	// ask this agent: their items' first calls go as one provider batch
	// unless the step says batch: false.
	Batch bool
	Node  *yaml.Node
}

// The openai provider's wire APIs (Agent.API).
const (
	APIResponses = "responses"
	APIChat      = "chat"
)

// ReasoningEfforts are the values of an agent's reasoning_effort.
var ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// Notify is one place the run's events go: a webhook that takes the
// documented JSON body, or a Slack-compatible one ({"text": ...}).
type Notify struct {
	URL    string // written in the plan
	URLEnv string // or read from this environment variable (a secret URL)
	Format string // json (default) or slack
	// On lists the events sent: waiting, failed, ended (default: all).
	On []string
	// LinkBase, when set, is the serve URL a waiting event's single-use
	// answer link starts with; LinkTTL is how long the link works.
	LinkBase string
	LinkTTL  time.Duration
	Node     *yaml.Node
}

// NotifyEvents are the events a notify target can ask for.
var NotifyEvents = []string{"waiting", "failed", "ended"}

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input  float64 // per million input tokens
	Output float64 // per million output tokens
	// CachedInput and CacheWrite price prompt-cache reads and writes
	// (nil: the provider's rule applied to Input).
	CachedInput *float64
	CacheWrite  *float64
	Node        *yaml.Node
}

// Response is one canned answer of the script provider.
type Response struct {
	Label     string     // "" for answers served in order
	Text      string     // the answer's text
	ToolCalls []ToolCall // tool calls the answer makes, if any
	Node      *yaml.Node
}

// ToolCall is a canned tool call.
type ToolCall struct {
	Name string
	Args map[string]any
}

// AgentBoard lists the board key patterns an agent may read and write
// (path.Match patterns; empty: any).
type AgentBoard struct {
	Read  []string
	Write []string
}

// Lookup returns the step with label, at any depth.
func (p *Plan) Lookup(label string) *Step {
	if p.lookup != nil {
		return p.lookup(label)
	}
	return p.labels[label]
}

// LookupWith makes Lookup ask find, which knows every label of the plan
// (a compiled plan's own index of its steps), and lets go of the plan's
// index: at 100k steps, a second map of every label is megabytes.
func (p *Plan) LookupWith(find func(string) *Step) { p.lookup, p.labels = find, nil }

// Agent returns the agent named name.
func (p *Plan) Agent(name string) *Agent {
	for _, a := range p.Agents {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// AgentNames lists the agents' names in plan order.
func (p *Plan) AgentNames() []string {
	out := make([]string, len(p.Agents))
	for i, a := range p.Agents {
		out[i] = a.Name
	}
	return out
}

// Labels lists every step label in plan order (children after their group).
func (p *Plan) Labels() []string {
	var out []string
	var walk func([]*Step)
	walk = func(steps []*Step) {
		for _, s := range steps {
			out = append(out, s.Label)
			walk(s.Parallel)
			walk(s.Steps)
		}
	}
	walk(p.Steps)
	return out
}

// AllSteps lists every step, groups before their children.
func (p *Plan) AllSteps() []*Step {
	var out []*Step
	var walk func([]*Step)
	walk = func(steps []*Step) {
		for _, s := range steps {
			out = append(out, s)
			walk(s.Parallel)
			walk(s.Steps)
		}
	}
	walk(p.Steps)
	return out
}

// numberSteps sets the Ord of p's labeled steps.
func (p *Plan) numberSteps() {
	n := int32(0)
	for _, s := range p.AllSteps() {
		if s.Label != "" {
			n++
			s.Ord = n
		}
	}
	p.numbered = n
}

// Numbered is how many steps numberSteps numbered (the largest Ord).
func (p *Plan) Numbered() int { return int(p.numbered) }

// VarDefault returns the default of var name.
func (p *Plan) VarDefault(name string) (any, bool) {
	for _, v := range p.Vars {
		if v.Name == name {
			return v.Default, true
		}
	}
	return nil, false
}

// DropNodes lets go of the YAML tree once the plan is checked and
// compiled: positions are only needed for the problems reported while
// loading, and the tree is most of a loaded plan's memory.
func (p *Plan) DropNodes() {
	for i := range p.Vars {
		p.Vars[i].Node = nil
	}
	for i := range p.Env {
		p.Env[i].Node = nil
	}
	for _, a := range p.Agents {
		a.Node = nil
		for i := range a.Responses {
			a.Responses[i].Node = nil
		}
	}
	for _, s := range p.AllSteps() {
		s.dropOwnNodes()
	}
	for i := range p.Outputs {
		p.Outputs[i].Expr.Node = nil
	}
	p.dropToolNodes()
}

// DropNodes lets go of the YAML nodes of s and the steps inside it.
func (s *Step) DropNodes() {
	s.dropOwnNodes()
	for _, c := range s.Parallel {
		c.DropNodes()
	}
	for _, c := range s.Steps {
		c.DropNodes()
	}
}

func (s *Step) dropOwnNodes() {
	s.Node, s.TypeNode = nil, nil
	if s.If != nil {
		s.If.Node = nil
	}
	if s.Retry != nil {
		s.Retry.Node = nil
		if s.Retry.Until != nil {
			s.Retry.Until.Node = nil
		}
	}
	if s.Write != nil {
		s.Write.KeyNode = nil
	}
	if s.ForEach != nil {
		s.ForEach.Node = nil
	}
	if s.NeedsNode != nil {
		s.NeedsNode = nil
	}
	if s.Call != nil {
		s.Call.Node = nil
		for i := range s.Call.Vars {
			s.Call.Vars[i].Node = nil
		}
		if s.Call.Plan != nil {
			s.Call.Plan.DropNodes()
		}
	}
}

func (p *Plan) dropToolNodes() {
	for _, t := range p.Tools {
		t.Node, t.KeyNode, t.Parameters, t.Command = nil, nil, nil, nil
		if t.Call != nil {
			t.Call.Node = nil
			if t.Call.Plan != nil {
				t.Call.Plan.DropNodes()
			}
		}
	}
	p.runOnly = nil
}

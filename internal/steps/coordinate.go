package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"gopkg.in/yaml.v3"
)

func init() { add(coordinateType{}) }

// coordinateType lets several agents work on one task over a shared board
// (docs/plans.md, coordinate). Each round a coordinator agent picks who contributes next and
// with what instruction, or ends the rounds; without one, agents take turns
// (round-robin) or bid for the turn (volunteer mode). A decider agent gives
// the final answer, or the last answer-kind contribution is it.
type coordinateType struct{}

// CoordinateResult is what a coordinate step reports.
type CoordinateResult struct {
	Rounds        int            `json:"rounds"`
	Contributions []Contribution `json:"contributions"`
	Decisions     []Decision     `json:"decisions"`
	Skipped       int            `json:"skipped"`    // rounds skipped for a coordinator's unusable answer
	DecidedBy     string         `json:"decided_by"` // the decider, or the agent whose contribution is the output
	Usage         LLMUsage       `json:"usage"`
	Calls         int            `json:"calls"`
}

// Contribution is one agent's turn. Kind is "answer" when the agent marked
// it as a final answer (it began with "ANSWER:"), else "contribution".
type Contribution struct {
	Round int    `json:"round"`
	Agent string `json:"agent"`
	Kind  string `json:"kind"`
	Text  string `json:"text"`
}

// Decision is what a round decided: the coordinator's answer (docs/plans.md), plus
// the bids of volunteer mode and the reason a round was skipped.
type Decision struct {
	Round       int     `json:"round"`
	By          string  `json:"by"` // the coordinator, "round-robin" or "volunteers"
	Terminate   bool    `json:"terminate"`
	NextAgent   *string `json:"next_agent"`
	Instruction *string `json:"instruction"`
	Bids        []Bid   `json:"bids,omitempty"`
	Error       string  `json:"error,omitempty"` // why the round was skipped
}

// Bid is one agent's answer to "will you take this round?" in volunteer
// mode.
type Bid struct {
	Agent      string  `json:"agent"`
	Volunteer  bool    `json:"volunteer"`
	Confidence float64 `json:"confidence"`
	Reason     string  `json:"reason"`
}

// Modes of a coordinate step.
const (
	modeCoordinator = "coordinator"
	modeRoundRobin  = "round_robin"
	modeVolunteer   = "volunteer"
)

type coordinateStep struct {
	agents      []string
	coordinator string
	decider     string
	mode        string
	maxRounds   int
	prompt      *engine.Template
	view        agents.ViewLimits
	// the plan's own instructions for the coordinator and the decider, in
	// place of the built-in ones (seed 002's coordinator_instructions,
	// decider_instructions)
	coordInstr, deciderInstr *engine.Template
}

// doneWord is the old plain-text way for a coordinator to end the rounds,
// still understood.
const doneWord = "DONE"

// Kinds of the entries a coordinate step writes (meta.kind).
const (
	kindProblem      = "problem"
	kindContribution = "contribution"
	kindAnswer       = "answer"
	kindDecision     = "decision"
	kindError        = "error"
)

func (coordinateType) Name() string           { return "coordinate" }
func (coordinateType) Result() any            { return CoordinateResult{} }
func (coordinateType) Spec() *engine.TypeSpec { return &coordinateSpec }

// Caps: the agents' calls run as an activity, and a replay runs the step
// again with the recorded answers.
func (coordinateType) Caps() engine.Caps {
	return engine.Caps{Replay: engine.ReplayRerun, Shows: engine.ShowsAgents}
}

var coordinateSpec = engine.TypeSpec{
	Doc: "Lets several agents work on one task over a shared board. Each round a coordinator agent picks " +
		"who contributes next and with what instruction, or ends the rounds; without one, agents take turns " +
		"(round_robin) or bid for the turn (volunteer). A decider agent gives the final answer, " +
		"or the last contribution marked ANSWER: is the output.",
	Fields: []engine.Field{
		{Name: "agents", Kind: engine.KindList, Required: true, Schema: `{"minItems": 1}`,
			Doc: "The agents that take turns.", Examples: []any{[]any{"planner", "coder", "reviewer"}}},
		{Name: "coordinator", Kind: engine.KindString,
			Doc: "An agent that names the next speaker (absent: round-robin).", Examples: []any{"lead"}},
		{Name: "decider", Kind: engine.KindString,
			Doc: "An agent that gives the final answer (absent: the last contribution).", Examples: []any{"lead"}},
		{Name: "max_rounds", Kind: engine.KindInt, Default: 6, Schema: `{"minimum": 1}`,
			Doc: "Most turns (default 6).", Examples: []any{6}},
		{Name: "prompt", Kind: engine.KindTemplate, Required: true,
			Doc: "The task the agents work on.", Examples: []any{"Plan the migration of ${{ vars.service }}."}},
		{Name: "mode", Kind: engine.KindEnum, Enum: []string{modeCoordinator, modeRoundRobin, modeVolunteer},
			Doc:      "coordinator, round_robin or volunteer (default coordinator with a coordinator, else round_robin).",
			Examples: []any{"round_robin"}},
		{Name: "view", Kind: engine.KindMapping, Schema: viewSchema,
			Doc: "Limits on the board view each turn sees.", Examples: []any{map[string]any{"entries": 20}}},
		{Name: "coordinator_instructions", Kind: engine.KindTemplate,
			Doc: "Replaces the coordinator's built-in instructions; {agents} in it stands for the list of agents. " +
				"The agents (when {agents} is absent), the JSON answer format (when the text does not name terminate), " +
				"the round and the board are still added, so the decision can be read.",
			Examples: []any{"You lead a design review. Pick the agent whose expertise the board lacks most.\nAgents:\n{agents}"}},
		{Name: "decider_instructions", Kind: engine.KindTemplate,
			Doc:      "Replaces the decider's built-in instructions; the board is still added after them.",
			Examples: []any{"Write the final plan as a numbered list; name who proposed each step."}},
	},
	Example: `- label: design
  type: coordinate
  agents: [planner, coder, reviewer]
  coordinator: lead
  max_rounds: 6
  prompt: Plan the migration of the billing service.`,
	Results: []engine.ResultField{
		{Name: "rounds", Doc: "Rounds played."},
		{Name: "contributions", Doc: "Each turn: round, agent, kind (contribution or answer), text."},
		{Name: "decisions", Doc: "What each round decided: by whom, terminate, next_agent, instruction, bids, error."},
		{Name: "skipped", Doc: "Rounds skipped for a coordinator's unusable answer."},
		{Name: "decided_by", Doc: "The decider, or the agent whose contribution is the output."},
		{Name: "usage", Doc: "Tokens used over all calls: input_tokens, output_tokens, cache_read_input_tokens and cache_creation_input_tokens (of the input), reasoning_tokens (of the output), cost_usd."},
		{Name: "calls", Doc: "Model calls made."},
	},
}

func (coordinateType) Decode(d *engine.Decoder) engine.Step {
	s := &coordinateStep{maxRounds: 6}
	if d.Required("agents") {
		n := d.Node("agents")
		if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
			d.Errorf(n, "agents must be a non-empty list of agent names")
		} else {
			seen := map[string]bool{}
			for _, c := range n.Content {
				if name := agentRef(d, c, "agents"); name != "" {
					if seen[name] {
						d.Errorf(c, "agent %q is listed twice", name)
					}
					seen[name] = true
					s.agents = append(s.agents, name)
				}
			}
		}
	}
	if n := d.Node("coordinator"); n != nil {
		s.coordinator = agentRef(d, n, "coordinator")
	}
	if n := d.Node("decider"); n != nil {
		s.decider = agentRef(d, n, "decider")
	}
	def := modeRoundRobin
	if d.Node("coordinator") != nil {
		def = modeCoordinator
	}
	s.mode = d.Enum("mode", def)
	switch n := d.Node("mode"); {
	case s.mode == modeCoordinator && d.Node("coordinator") == nil:
		d.Errorf(n, "mode: coordinator needs a coordinator agent")
	case s.mode != modeCoordinator && d.Node("coordinator") != nil:
		d.Errorf(n, "mode: %s has no coordinator; drop coordinator or the mode", s.mode)
	}
	s.maxRounds = d.Int("max_rounds", s.maxRounds)
	if s.maxRounds < 1 {
		d.Errorf(d.Node("max_rounds"), "max_rounds must be at least 1")
	}
	if d.Required("prompt") {
		s.prompt = d.Template("prompt")
	}
	if n := d.Node("view"); n != nil {
		s.view = decodeView(d, n)
	}
	if n := d.Node("coordinator_instructions"); n != nil {
		s.coordInstr = d.Template("coordinator_instructions")
		if s.mode != modeCoordinator {
			d.Errorf(n, "coordinator_instructions needs a coordinator agent (mode %s has none)", s.mode)
		}
	}
	if n := d.Node("decider_instructions"); n != nil {
		s.deciderInstr = d.Template("decider_instructions")
		if d.Node("decider") == nil {
			d.Errorf(n, "decider_instructions needs a decider agent")
		}
	}
	return s
}

// decodeView reads `view: {entries, keys, max_bytes}`.
func decodeView(d *engine.Decoder, n *yaml.Node) agents.ViewLimits {
	var v agents.ViewLimits
	r := d.Reporter()
	for _, f := range plans.Fields(r, n, "view") {
		var dst *int
		switch f.Key {
		case "entries":
			dst = &v.Entries
		case "keys":
			dst = &v.Keys
		case "max_bytes":
			dst = &v.MaxBytes
		default:
			plans.Unknown(r, f, "view", []string{"entries", "keys", "max_bytes"})
			continue
		}
		if x, ok := plans.Int(r, f.Value, "view."+f.Key); ok {
			if x < 1 {
				d.Errorf(f.Value, "view.%s must be at least 1", f.Key)
			}
			*dst = x
		}
	}
	return v
}

// agentRef checks that n names an agent of the plan.
func agentRef(d *engine.Decoder, n *yaml.Node, what string) string {
	name, ok := plans.String(d.Reporter(), n, what)
	if !ok {
		return ""
	}
	if d.Plan.Agent(name) == nil {
		d.Errorf(n, "%s: no agent named %q in the plan's agents%s", what, name, plans.Suggest(name, d.Plan.AgentNames()))
		return ""
	}
	return name
}

// rounds is one visit's state: the shared board of docs/plans.md's coordinate (the public
// entries, mirrored to the run's board in section contributions) and the
// result so far.
type rounds struct {
	s      *coordinateStep
	ctx    context.Context
	sc     *engine.StepContext
	set    *agents.Set
	task   string
	public []agents.ViewEntry
	res    CoordinateResult
}

func (s *coordinateStep) Run(ctx context.Context, sc *engine.StepContext) (engine.Result, error) {
	task, err := sc.Eval(s.prompt)
	if err != nil {
		return engine.Result{}, fmt.Errorf("prompt: %w", err)
	}
	set, err := sc.Agents()
	if err != nil {
		return engine.Result{}, err
	}
	r := &rounds{s: s, ctx: ctx, sc: sc, set: set, task: task}
	out, err := r.run()
	var budget *agents.BudgetError
	var div *agents.Divergence
	if errors.As(err, &budget) || errors.As(err, &div) {
		// As for llm: a spent budget or a diverged replay ends the run.
		err = &engine.RunError{Status: engine.StatusFailed, Label: sc.Label, Fatal: true, Err: err}
	}
	return engine.Result{Output: out, Fields: r.res}, err
}

func (r *rounds) run() (string, error) {
	s := r.s
	if err := r.post("user", kindProblem, r.task, nil); err != nil {
		return "", err
	}
	for round := 1; round <= s.maxRounds; round++ {
		// The budget is checked before every round (docs/plans.md), and again
		// before every call against the most that call could spend.
		if err := r.set.CheckBudget(r.sc.Board); err != nil {
			return "", err
		}
		var d Decision
		var err error
		switch s.mode {
		case modeCoordinator:
			d, err = r.coordinate(round)
		case modeVolunteer:
			d, err = r.volunteers(round)
		default:
			next := s.agents[(round-1)%len(s.agents)]
			d = Decision{Round: round, By: "round-robin", NextAgent: &next}
		}
		if err != nil {
			return "", err
		}
		r.res.Rounds = round
		r.res.Decisions = append(r.res.Decisions, d)
		if err := r.post(d.By, kindDecision, d, map[string]any{"round": round}); err != nil {
			return "", err
		}
		if d.Error != "" {
			r.res.Skipped++
			if err := r.post("runner", kindError, fmt.Sprintf("round %d skipped: %s", round, d.Error), map[string]any{"round": round}); err != nil {
				return "", err
			}
			continue
		}
		if d.Terminate {
			break
		}
		if err := r.contribute(round, *d.NextAgent, d.Instruction); err != nil {
			return "", err
		}
	}
	return r.decide()
}

// post appends an entry to the visit's public board and to the run's board.
func (r *rounds) post(author, kind string, content any, meta map[string]any) error {
	r.public = append(r.public, agents.ViewEntry{Kind: kind, Author: author, Content: content})
	m := map[string]any{"visit": r.sc.Visit, "kind": kind}
	for k, v := range meta {
		m[k] = v
	}
	role := "assistant"
	switch kind {
	case kindProblem:
		role = "user"
	case kindError:
		role = "system"
	}
	if kind == kindDecision {
		// Stored as a JSON object, so expressions read its fields.
		b, err := json.Marshal(content)
		if err != nil {
			return err
		}
		var v any
		_ = json.Unmarshal(b, &v)
		content = v
	}
	_, err := r.sc.Board.Append(board.Entry{Section: "contributions", Role: role, Author: author,
		Label: r.sc.Label, Content: content, Meta: m})
	return err
}

// ask sends one prompt to agent in a fresh conversation and returns its
// answer.
func (r *rounds) ask(agent, prompt string) (string, error) {
	agent = r.sc.AgentName(agent) // in a called plan, the run's name of its agent
	ss, err := r.set.Session(r.sc.Board, r.sc.Label, r.sc.Visit, agent)
	if err != nil {
		return "", err
	}
	ss.Log = r.sc.Log.With().Str("agent", agent).Int("visit", r.sc.Visit).Logger()
	resp, err := ss.Send(r.ctx, agents.Message{Role: agents.RoleUser, Content: prompt})
	st := ss.Stats()
	r.res.Calls += st.Calls
	u := usageOf(st)
	u.CostUSD = st.CostUSD // rounded once, in the sum
	r.res.Usage = r.res.Usage.Add(u)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(resp.Text), nil
}

func (r *rounds) view(agent string) string {
	agent = r.sc.AgentName(agent)
	return r.set.View(r.sc.Board, agent, r.public, r.s.view)
}

// coordinate asks the coordinator for the round's decision. An answer it
// cannot use skips the round (Decision.Error); only a failed call fails
// the step.
func (r *rounds) coordinate(round int) (Decision, error) {
	s := r.s
	var list strings.Builder
	for _, name := range s.agents {
		desc := "(no description)"
		if a, ok := r.set.Agent(name); ok && a.System != "" {
			desc = clipText(firstLine(a.System), 120)
		}
		fmt.Fprintf(&list, "  - %s: %s\n", name, desc)
	}
	instr := defaultCoordinatorInstructions
	if s.coordInstr != nil {
		custom, err := r.sc.Eval(s.coordInstr)
		if err != nil {
			return Decision{}, fmt.Errorf("coordinator_instructions: %w", err)
		}
		instr = strings.TrimRight(custom, "\n") + "\n"
		if !strings.Contains(instr, "{agents}") {
			instr += "Available agents:\n{agents}"
		}
		if !strings.Contains(instr, "terminate") { // the answer must stay readable
			instr += decisionFormat
		}
	}
	prompt := strings.Replace(instr, "{agents}", strings.TrimRight(list.String(), "\n"), 1) +
		fmt.Sprintf("\n\nRound %d of at most %d.\n\nBlackboard state:\n%s", round, s.maxRounds, r.view(s.coordinator))
	answer, err := r.ask(s.coordinator, prompt)
	if err != nil {
		return Decision{}, fmt.Errorf("round %d, coordinator %s: %w", round, s.coordinator, err)
	}
	d := parseDecision(answer, s.agents)
	d.Round, d.By = round, s.coordinator
	return d, nil
}

// decisionFormat is how a coordinator answers; parseDecision reads it.
const decisionFormat = `
Output JSON exactly:
{"terminate": <bool>, "next_agent": <str|null>, "instruction": <str|null>}
If terminating, set next_agent and instruction to null.`

// defaultCoordinatorInstructions are seed 002's; {agents} is the list.
const defaultCoordinatorInstructions = `You coordinate a team of specialist agents on a shared problem.
Read the blackboard state below and decide:
- Should we terminate now? (Has a satisfactory answer been written?)
- If continuing, which agent should contribute next?
- What specific instruction should that agent receive?
Available agents:
{agents}` + decisionFormat

// parseDecision reads a coordinator's answer: the coordinator's JSON object (docs/plans.md), found
// alone, in a ``` fence or inside prose; or, tolerated, an answer that is
// just an agent's name or DONE. Anything else, or a name that is not one
// of agents, is a decision with Error set.
func parseDecision(answer string, names []string) Decision {
	obj, found := findObject(answer, "terminate", "next_agent")
	if !found {
		word := strings.Trim(strings.TrimSpace(answer), "`*_\"'.!")
		if strings.EqualFold(word, doneWord) {
			return Decision{Terminate: true}
		}
		for _, n := range names {
			if strings.EqualFold(word, n) {
				return Decision{NextAgent: &n}
			}
		}
		return Decision{Error: fmt.Sprintf("the coordinator's answer has no JSON decision: %q", clipText(answer, 200))}
	}
	var d Decision
	switch t := obj["terminate"].(type) {
	case nil:
	case bool:
		d.Terminate = t
	default:
		return Decision{Error: fmt.Sprintf("terminate must be true or false, got %s", clipText(compact(t), 80))}
	}
	switch v := obj["instruction"].(type) {
	case nil:
	case string:
		d.Instruction = &v
	default:
		return Decision{Error: fmt.Sprintf("instruction must be a string or null, got %s", clipText(compact(v), 80))}
	}
	switch v := obj["next_agent"].(type) {
	case nil:
	case string:
		d.NextAgent = &v
	default:
		return Decision{Error: fmt.Sprintf("next_agent must be a string or null, got %s", clipText(compact(v), 80))}
	}
	if d.Terminate {
		return d
	}
	if d.NextAgent == nil {
		d.Error = "the coordinator neither terminated nor named a next_agent"
		return d
	}
	for _, n := range names {
		if *d.NextAgent == n {
			return d
		}
	}
	d.Error = fmt.Sprintf("the coordinator picked unknown agent %q (agents: %s)", clipText(*d.NextAgent, 80), strings.Join(names, ", "))
	return d
}

// findObject returns the first JSON object in text (alone, in a fence, or
// after prose) that has at least one of the keys.
func findObject(text string, keys ...string) (map[string]any, bool) {
	candidates := []string{}
	for _, m := range fenceRE().FindAllStringSubmatch(text, -1) {
		candidates = append(candidates, m[1])
	}
	candidates = append(candidates, text)
	for _, c := range candidates {
		for i := 0; i < len(c); i++ {
			if c[i] != '{' {
				continue
			}
			var obj map[string]any
			if json.NewDecoder(strings.NewReader(c[i:])).Decode(&obj) != nil {
				continue
			}
			for _, k := range keys {
				if _, ok := obj[k]; ok {
					return obj, true
				}
			}
		}
	}
	return nil, false
}

// contribute runs the chosen agent with the instruction, the board's view
// and its private notes, and posts its contribution.
func (r *rounds) contribute(round int, agent string, instruction *string) error {
	ins := fmt.Sprintf("Contribute to the blackboard as %s.", agent)
	if instruction != nil && strings.TrimSpace(*instruction) != "" {
		ins = *instruction
	}
	prompt := fmt.Sprintf("You are %s.\n\nBlackboard state:\n%s\nInstruction: %s\n\n"+
		"Produce ONE contribution in plain text. Be specific; cite prior contributions when useful. "+
		"If it is a final answer to the problem, begin it with \"ANSWER:\".", agent, r.view(agent), ins)
	text, err := r.ask(agent, prompt)
	if err != nil {
		return fmt.Errorf("round %d, agent %s: %w", round, agent, err)
	}
	kind := kindContribution
	if rest, ok := cutAnswer(text); ok {
		kind, text = kindAnswer, rest
	}
	r.res.Contributions = append(r.res.Contributions, Contribution{Round: round, Agent: agent, Kind: kind, Text: text})
	return r.post(agent, kind, text, map[string]any{"round": round})
}

// cutAnswer recognises a contribution marked as a final answer.
func cutAnswer(text string) (string, bool) {
	t := strings.TrimLeft(text, "*_ \t\n")
	if len(t) >= 7 && strings.EqualFold(t[:7], "ANSWER:") {
		return strings.TrimSpace(strings.TrimLeft(t[7:], "*_ \t")), true
	}
	return text, false
}

// decide gives the final answer: the decider's, else the last answer-kind
// contribution, else the last contribution.
func (r *rounds) decide() (string, error) {
	s := r.s
	if s.decider != "" {
		instr := "You synthesize the final answer from a multi-agent blackboard discussion. " +
			"Read the blackboard state below and produce the best answer you can. Cite specific contributions " +
			"when useful; acknowledge dissent if it matters."
		if s.deciderInstr != nil {
			custom, err := r.sc.Eval(s.deciderInstr)
			if err != nil {
				return "", fmt.Errorf("decider_instructions: %w", err)
			}
			instr = strings.TrimRight(custom, "\n")
		}
		prompt := fmt.Sprintf("%s\n\nFull blackboard state:\n%s", instr, r.view(s.decider))
		out, err := r.ask(s.decider, prompt)
		if err != nil {
			return "", fmt.Errorf("decider %s: %w", s.decider, err)
		}
		r.res.DecidedBy = s.decider
		return out, nil
	}
	cs := r.res.Contributions
	if len(cs) == 0 {
		return "", fmt.Errorf("no agent contributed in %d rounds (%d skipped; see section contributions)", r.res.Rounds, r.res.Skipped)
	}
	pick := cs[len(cs)-1]
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].Kind == kindAnswer {
			pick = cs[i]
			break
		}
	}
	r.res.DecidedBy = pick.Agent
	return pick.Text, nil
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// Describe is what a dry run shows.
func (s *coordinateStep) Describe() string {
	who := "round-robin"
	switch s.mode {
	case modeCoordinator:
		who = "coordinator " + s.coordinator
	case modeVolunteer:
		who = "volunteers bid for each round"
	}
	return fmt.Sprintf("agents %s, %s, at most %d rounds", strings.Join(s.agents, ", "), who, s.maxRounds)
}

// volunteers is a round of volunteer mode (Salemi et al., arXiv
// 2510.01285): every agent sees the request and the board and bids to
// take the turn or passes, with a reason; the most confident volunteer
// contributes (the first listed on a tie). When no one volunteers, the
// rounds end.
func (r *rounds) volunteers(round int) (Decision, error) {
	d := Decision{Round: round, By: "volunteers"}
	for _, name := range r.s.agents {
		prompt := fmt.Sprintf(`You are %s, one of a team of agents (%s) working on a shared problem.

Request:
%s

Blackboard state:
%s
Round %d of at most %d. Should you contribute the next turn? Volunteer only if you can add something the board still lacks; otherwise pass.
Output JSON exactly:
{"volunteer": <bool>, "confidence": <number from 0 to 1>, "reason": <str>}`,
			name, strings.Join(r.s.agents, ", "), r.task, r.view(name), round, r.s.maxRounds)
		answer, err := r.ask(name, prompt)
		if err != nil {
			return Decision{}, fmt.Errorf("round %d, bid of %s: %w", round, name, err)
		}
		d.Bids = append(d.Bids, parseBid(name, answer))
	}
	best := -1
	for i, b := range d.Bids {
		if b.Volunteer && (best < 0 || b.Confidence > d.Bids[best].Confidence) {
			best = i
		}
	}
	if best < 0 {
		d.Terminate = true
		return d, nil
	}
	win := d.Bids[best]
	ins := fmt.Sprintf("You volunteered for this round: %s", win.Reason)
	d.NextAgent, d.Instruction = &win.Agent, &ins
	return d, nil
}

// parseBid reads a bid: a JSON object with volunteer (alone, in a fence or
// in prose), or just the word "volunteer" or "pass". Anything else is a
// pass whose reason says the bid was unreadable.
func parseBid(agent, answer string) Bid {
	b := Bid{Agent: agent}
	obj, found := findObject(answer, "volunteer")
	if !found {
		switch strings.ToLower(strings.Trim(strings.TrimSpace(answer), "`*_\"'.!")) {
		case "volunteer", "yes":
			b.Volunteer, b.Confidence = true, 0.5
		case "pass", "no":
		default:
			b.Reason = fmt.Sprintf("unreadable bid, taken as a pass: %q", clipText(answer, 200))
		}
		return b
	}
	v, ok := obj["volunteer"].(bool)
	if !ok {
		b.Reason = fmt.Sprintf("volunteer must be true or false, got %s; taken as a pass", clipText(compact(obj["volunteer"]), 80))
		return b
	}
	b.Volunteer = v
	b.Reason, _ = obj["reason"].(string)
	if c, ok := obj["confidence"].(float64); ok {
		b.Confidence = min(max(c, 0), 1)
	} else if v {
		b.Confidence = 0.5
	}
	return b
}

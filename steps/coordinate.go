package steps

import (
	"context"
	"fmt"
	"strings"

	"github.com/planrunner/runner/agents"
	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/engine"
	"github.com/planrunner/runner/plans"
	"gopkg.in/yaml.v3"
)

func init() { add(coordinateType{}) }

// coordinateType lets several agents work on one task in turns. A
// coordinator agent picks who speaks next (or round-robin without one),
// and a decider agent gives the final answer (or the last answer is it).
type coordinateType struct{}

// CoordinateResult is what a coordinate step reports.
type CoordinateResult struct {
	Rounds        int            `json:"rounds"`
	Contributions []Contribution `json:"contributions"`
	DecidedBy     string         `json:"decided_by"` // the decider, or the agent that spoke last
	Usage         agents.Usage   `json:"usage"`
	Calls         int            `json:"calls"`
}

// Contribution is one agent's turn.
type Contribution struct {
	Round int    `json:"round"`
	Agent string `json:"agent"`
	Text  string `json:"text"`
}

type coordinateStep struct {
	agents      []string
	coordinator string
	decider     string
	maxRounds   int
	prompt      *engine.Template
}

// doneWord is what a coordinator answers when the work is complete.
const doneWord = "DONE"

func (coordinateType) Name() string { return "coordinate" }
func (coordinateType) Result() any  { return CoordinateResult{} }

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
	s.maxRounds = d.Int("max_rounds", s.maxRounds)
	if s.maxRounds < 1 {
		d.Errorf(d.Node("max_rounds"), "max_rounds must be at least 1")
	}
	if d.Required("prompt") {
		s.prompt = d.Template("prompt")
	}
	return s
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

func (s *coordinateStep) Run(ctx context.Context, sc *engine.StepContext) (engine.Result, error) {
	task, err := sc.Eval(s.prompt)
	if err != nil {
		return engine.Result{}, fmt.Errorf("prompt: %w", err)
	}
	set, err := sc.Agents()
	if err != nil {
		return engine.Result{}, err
	}
	res := CoordinateResult{}
	ask := func(agent, prompt string) (string, error) {
		ss, err := set.Session(sc.Board, sc.Label, sc.Visit, agent)
		if err != nil {
			return "", err
		}
		resp, err := ss.Send(ctx, agents.Message{Role: agents.RoleUser, Content: prompt})
		st := ss.Stats()
		res.Calls += st.Calls
		res.Usage = res.Usage.Add(st.Usage)
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(resp.Text), nil
	}
	for round := 1; round <= s.maxRounds; round++ {
		speaker := s.agents[(round-1)%len(s.agents)]
		if s.coordinator != "" {
			pick, err := s.pick(ask, task, res.Contributions)
			if err != nil {
				return engine.Result{Fields: res}, err
			}
			if pick == doneWord {
				break
			}
			speaker = pick
		}
		text, err := ask(speaker, turnPrompt(task, speaker, res.Contributions))
		if err != nil {
			return engine.Result{Fields: res}, fmt.Errorf("round %d, agent %s: %w", round, speaker, err)
		}
		res.Rounds = round
		res.Contributions = append(res.Contributions, Contribution{Round: round, Agent: speaker, Text: text})
		if _, err := sc.Board.Append(board.Entry{Section: "contributions", Role: "assistant", Author: speaker,
			Label: sc.Label, Content: text, Meta: map[string]any{"visit": sc.Visit, "round": round}}); err != nil {
			return engine.Result{Fields: res}, err
		}
	}
	if len(res.Contributions) == 0 {
		return engine.Result{Fields: res}, fmt.Errorf("the coordinator said %s before any agent spoke", doneWord)
	}
	last := res.Contributions[len(res.Contributions)-1]
	output, decidedBy := last.Text, last.Agent
	if s.decider != "" {
		prompt := fmt.Sprintf("Task:\n%s\n\nThe agents said:\n%s\nGive the final answer to the task.", task, transcript(res.Contributions))
		if output, err = ask(s.decider, prompt); err != nil {
			return engine.Result{Fields: res}, fmt.Errorf("decider %s: %w", s.decider, err)
		}
		decidedBy = s.decider
	}
	res.DecidedBy = decidedBy
	return engine.Result{Output: output, Fields: res}, nil
}

// pick asks the coordinator who speaks next; an answer that names no agent
// gets one corrective re-ask, then fails the step.
func (s *coordinateStep) pick(ask func(agent, prompt string) (string, error), task string, so []Contribution) (string, error) {
	prompt := fmt.Sprintf("You coordinate agents working on a task.\n\nTask:\n%s\n\nSo far:\n%s\nWho should speak next? Answer with exactly one name from: %s; or %s if the task is complete.",
		task, transcript(so), strings.Join(s.agents, ", "), doneWord)
	for try := 0; try < 2; try++ {
		answer, err := ask(s.coordinator, prompt)
		if err != nil {
			return "", fmt.Errorf("coordinator %s: %w", s.coordinator, err)
		}
		if name := s.match(answer); name != "" {
			return name, nil
		}
		prompt = fmt.Sprintf("%q is not one of: %s, %s. Answer with exactly one of those words.", firstLine(answer), strings.Join(s.agents, ", "), doneWord)
	}
	return "", fmt.Errorf("coordinator %s did not name one of %s or %s", s.coordinator, strings.Join(s.agents, ", "), doneWord)
}

// match finds the agent (or DONE) a coordinator's answer names: the one
// candidate that appears in it as a word, ignoring case. An answer naming
// none, or several, matches nothing.
func (s *coordinateStep) match(answer string) string {
	words := strings.FieldsFunc(strings.ToLower(answer), func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	found := ""
	for _, cand := range append(append([]string{}, s.agents...), doneWord) {
		for _, w := range words {
			if w == strings.ToLower(cand) {
				if found != "" && found != cand {
					return ""
				}
				found = cand
			}
		}
	}
	return found
}

func turnPrompt(task, speaker string, so []Contribution) string {
	if len(so) == 0 {
		return fmt.Sprintf("Task:\n%s\n\nYou are %s and speak first.", task, speaker)
	}
	return fmt.Sprintf("Task:\n%s\n\nSo far:\n%s\nYou are %s. Add your contribution.", task, transcript(so), speaker)
}

func transcript(so []Contribution) string {
	if len(so) == 0 {
		return "(nothing yet)\n"
	}
	var b strings.Builder
	for _, c := range so {
		fmt.Fprintf(&b, "[round %d] %s: %s\n", c.Round, c.Agent, c.Text)
	}
	return b.String()
}

// Describe is what a dry run shows.
func (s *coordinateStep) Describe() string {
	who := "round-robin"
	if s.coordinator != "" {
		who = "coordinator " + s.coordinator
	}
	return fmt.Sprintf("agents %s, %s, at most %d rounds", strings.Join(s.agents, ", "), who, s.maxRounds)
}

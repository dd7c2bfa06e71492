package agents

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/budget"
	"github.com/planrunner/runner/internal/plans"
)

// PlanName is the name a plan's spending counts under in the budget
// ledger and in `runner cost`: its name, else its file's name without
// the extension.
func PlanName(p *plans.Plan) string {
	if p.Name != "" {
		return p.Name
	}
	base := filepath.Base(p.Path)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// useBudgets takes the plan's and the options' budgets that could apply
// to this run's calls, and the ledger they are kept in.
func (s *Set) useBudgets(plan *plans.Plan, opt Options, getenv func(string) string) {
	s.runID, s.planName = opt.RunID, PlanName(plan)
	all := append(append([]plans.Budget(nil), plan.Budgets.Limits...), opt.Budgets...)
	for _, b := range all {
		applies := b.Plan == s.planName
		for _, a := range s.agents {
			applies = applies || b.Agent == a.Name || (b.Model != "" && strings.EqualFold(b.Model, a.Model))
		}
		if applies || b.Model != "" { // a call may name another model (--agent, spawned agents)
			s.budgets = append(s.budgets, b)
		}
	}
	if len(s.budgets) == 0 {
		return
	}
	s.ledger = opt.Ledger
	if s.ledger == nil {
		s.ledger = budget.Open(budget.Dir(getenv))
	}
}

// checkBudgets fails when a budget in dollars applies to an agent whose
// calls' cost could not be known before they are sent: its model's
// price, or its largest answer, is unknown.
func checkBudgets(bs []plans.Budget, planName string, agents map[string]*Agent) error {
	var probs []string
	for _, b := range bs {
		if b.MaxCostUSD <= 0 && b.MaxTokens <= 0 {
			continue
		}
		for _, a := range sortedAgents(agents) {
			c := budget.Charge{Plan: planName, Agent: a.Name, Model: a.Model}
			if !budget.Applies(b, c) {
				continue
			}
			req := &Request{Model: a.Model, MaxTokens: a.Spec.MaxTokens, Thinking: a.Spec.Thinking}
			if _, ok := outputCap(a, req); !ok {
				probs = append(probs, fmt.Sprintf("agent %s: the budget of %s (%s) needs max_tokens on this agent: the most model %q may answer is not known, so its calls could not be checked against the budget", a.Name, b.Scope(), b.At, a.Model))
			}
			if _, ok := priceFor(a, a.Model); !ok && b.MaxCostUSD > 0 {
				probs = append(probs, strings.Replace(unknownPrice(a.Name, a.Model), "limits.max_cost_usd", "the budget of "+b.Scope(), 1))
			}
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("%s", strings.Join(dedupe(probs), "\n"))
	}
	return nil
}

func sortedAgents(m map[string]*Agent) []*Agent {
	out := make([]*Agent, 0, len(m))
	for _, a := range m {
		out = append(out, a)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Name < out[j-1].Name; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func dedupe(l []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range l {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// holdTTL is how long a call's hold in the ledger counts unless it is
// settled: longer than the call may take with its retries, so that only
// a hold whose run died expires.
func holdTTL(a *Agent) time.Duration {
	return 4*a.Timeout + 5*time.Minute
}

// Raise adds usd to every shared budget for the rest of this run: a
// person allowed the run to spend that much beyond them.
func (s *Set) Raise(usd float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raised += usd
}

// Raised is what Raise has added to the shared budgets for this run.
func (s *Set) Raised() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raised
}

// Budgets are the shared budgets that apply to the run's calls.
func (s *Set) Budgets() []plans.Budget { return s.budgets }

// CallCeiling is the most one call of agent spec may cost before it is
// sent, as the budgets reckon it: its input (the system prompt and
// promptBytes of prompt, estimated as for a real call) and its largest
// answer at its model's price. priced is false when the price is not
// known, bounded false when the largest answer is not.
func CallCeiling(spec *plans.Agent, promptBytes int) (usd float64, tokens int, priced, bounded bool) {
	a := &Agent{Name: spec.Name, Provider: spec.Provider, Model: spec.Model, Spec: spec}
	req := &Request{Model: spec.Model, MaxTokens: spec.MaxTokens, Thinking: spec.Thinking, System: spec.System,
		Messages: []Message{{Role: RoleUser, Content: strings.Repeat(" ", promptBytes)}}}
	in := inputEstimate(req)
	out, bounded := outputCap(a, req)
	p, priced := priceFor(a, spec.Model)
	return p.Cost(Usage{InputTokens: in, OutputTokens: out}), in + out, priced, bounded
}

// RaiseTo makes what the shared budgets allow this run beyond them at
// least usd: the answers on the board say how much, and a resumed run
// reads them again.
func (s *Set) RaiseTo(usd float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raised = max(s.raised, usd)
}

// OnExceed is the plan's budgets.on_exceed: what a step does when a
// shared budget refuses one of its calls.
func (s *Set) OnExceed() string { return s.onExceed }

// KindBudget is the recording of a call a shared budget refused, made
// when the step asks a person about it (on_exceed: ask): Label and Visit
// are the step visit's, Call the number of its question, Response a
// BudgetRefusal. A replay refuses the same call from it, without the
// ledger, so it asks at the same place and reads the same answer.
const KindBudget = "budget"

// BudgetRefusal is what a KindBudget recording holds.
type BudgetRefusal struct {
	Input string `json:"input"` // the question's input label
	Call  int    `json:"call"`  // the model call refused, numbered in its visit
	// RaisedUSD is what answers had added to the budgets for the run
	// when the call was refused.
	RaisedUSD float64               `json:"raised_usd"`
	Exceeded  *budget.ExceededError `json:"exceeded"`
}

// BudgetRefusalRecording is the recording of question n of a step visit
// about refusal r.
func BudgetRefusalRecording(label string, visit, n int, r BudgetRefusal) (board.Recording, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return board.Recording{}, err
	}
	return board.Recording{Label: label, Visit: visit, Call: n, Kind: KindBudget, Response: raw}, nil
}

// DecodeBudgetRefusal reads a KindBudget recording.
func DecodeBudgetRefusal(rec board.Recording) (BudgetRefusal, bool) {
	var r BudgetRefusal
	if rec.Kind != KindBudget || json.Unmarshal(rec.Whole().Response, &r) != nil || r.Exceeded == nil {
		return BudgetRefusal{}, false
	}
	return r, true
}

// RefusalSource is a ReplaySource that knows the calls shared budgets
// refused in the recorded run.
type RefusalSource interface {
	// Refusal is the refusal of call of a step visit, made while raised
	// had been added to the budgets, if the recording has one.
	Refusal(label string, visit, call int, raised float64) (*budget.ExceededError, bool)
}

func (m recordings) Refusal(label string, visit, call int, raised float64) (*budget.ExceededError, bool) {
	for n := 1; ; n++ {
		rec, ok := m[callKey{KindBudget, label, visit, n}]
		if !ok {
			return nil, false
		}
		if r, ok := DecodeBudgetRefusal(rec); ok && r.Call == call && math.Abs(r.RaisedUSD-raised) < 1e-9 {
			return r.Exceeded, true
		}
	}
}

// replayedRefusal is the recorded refusal of a replayed call, if the
// recorded run's budget refused it.
func (s *Set) replayedRefusal(label string, visit, call int) (*budget.ExceededError, bool) {
	if s.replay == nil {
		return nil, false
	}
	if f, ok := s.replay.(ForkSource); ok && f.Live(label, visit) {
		return nil, false
	}
	rs, ok := s.replay.(RefusalSource)
	if !ok {
		return nil, false
	}
	return rs.Refusal(label, visit, call, s.Raised())
}

package plans

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// Budgets are spending limits shared by every run on the machine: what
// the model calls of all runs together may cost, or how many tokens they
// may use, per calendar day or month in UTC. The plan gives them under
// `budgets:`, the user's config for every plan (internal/budget keeps the
// ledger they are checked against).
type Budgets struct {
	// OnExceed is what a run does before a call that would cross one:
	// OnExceedFail (the default) or OnExceedAsk.
	OnExceed string
	Limits   []Budget
}

// What a run does before a call that would cross a budget.
const (
	OnExceedFail = "fail" // the call is not sent and the step fails
	// OnExceedAsk: the run waits for a person to raise the budget for
	// it, or stop the step (internal/steps/budget.go).
	OnExceedAsk = "ask"
)

// Budget is one spending limit. Exactly one of Agent, Model and Plan
// names its scope: the calls of agents of that name (in any plan), of
// that model, or of runs of the plan of that name.
type Budget struct {
	Agent, Model, Plan string
	Period             string // PeriodDay or PeriodMonth
	MaxCostUSD         float64
	MaxTokens          int
	// Where it was given, for messages: file:line.
	At   string
	Node *yaml.Node `json:"-"`
}

// Budget periods: calendar days and months in UTC.
const (
	PeriodDay   = "day"
	PeriodMonth = "month"
)

// Scope is what the budget limits, as messages name it: "agent coder",
// "model gpt-4o", "plan fix-tests".
func (b Budget) Scope() string {
	switch {
	case b.Agent != "":
		return "agent " + b.Agent
	case b.Model != "":
		return "model " + b.Model
	}
	return "plan " + b.Plan
}

// BudgetsOnTemporal is why a plan with budgets does not start on
// Temporal: its calls run on workers on other machines, each with its
// own ledger, so no one ledger would see them all.
const BudgetsOnTemporal = "budgets: is not supported on Temporal: the ledger they are checked against is kept on one machine, and a run's calls are made by workers on others; run this plan without --engine temporal"

// ConfigBudgetsOnTemporal is why a run does not start on Temporal while
// the user's config at path gives budgets: for the reason of
// BudgetsOnTemporal, they could not be checked there.
func ConfigBudgetsOnTemporal(path string) string {
	return "the budgets: of your config " + path + " are not supported on Temporal: the ledger they are checked against is kept on one machine, and a run's calls are made by workers on others; run without --engine temporal, or without those budgets (RUNNER_CONFIG names another config)"
}

var budgetFields = []string{"on_exceed", "limits"}
var budgetLimitFields = []string{"agent", "model", "plan", "period", "max_cost_usd", "max_tokens"}

// ParseBudgets reads a `budgets:` block of file (a plan or the user's
// config):
//
//	budgets:
//	  on_exceed: fail
//	  limits:
//	    - {agent: coder, period: day, max_cost_usd: 5}
//	    - {plan: fix-tests, period: month, max_tokens: 2000000}
func ParseBudgets(r *Reporter, n *yaml.Node) Budgets {
	out := Budgets{OnExceed: OnExceedFail}
	for _, f := range Fields(r, n, "budgets") {
		switch f.Key {
		case "on_exceed":
			if v, ok := String(r, f.Value, "budgets.on_exceed"); ok {
				switch v {
				case OnExceedFail, OnExceedAsk:
				default:
					r.At(f.Value, "budgets.on_exceed: %q is not fail or ask", v)
				}
				out.OnExceed = v
			}
		case "limits":
			list := Resolve(f.Value)
			if list == nil || list.Kind != yaml.SequenceNode {
				r.At(f.Value, "budgets.limits must be a list, got %s", KindName(list))
				continue
			}
			for i, item := range list.Content {
				if b, ok := parseBudget(r, item, fmt.Sprintf("budgets.limits[%d]", i)); ok {
					out.Limits = append(out.Limits, b)
				}
			}
		default:
			Unknown(r, f, "budgets", budgetFields)
		}
	}
	return out
}

func parseBudget(r *Reporter, n *yaml.Node, what string) (Budget, bool) {
	b := Budget{Node: n}
	if n != nil {
		b.At = fmt.Sprintf("%s:%d", r.File, n.Line)
	}
	before := len(r.List)
	scopes, maxima := 0, 0
	for _, f := range Fields(r, n, what) {
		switch f.Key {
		case "agent", "model", "plan":
			v, ok := String(r, f.Value, what+"."+f.Key)
			if !ok {
				continue
			}
			if v == "" {
				r.At(f.Value, "%s.%s must not be empty", what, f.Key)
			}
			scopes++
			switch f.Key {
			case "agent":
				b.Agent = v
			case "model":
				b.Model = v
			default:
				b.Plan = v
			}
		case "period":
			if v, ok := String(r, f.Value, what+".period"); ok {
				if v != PeriodDay && v != PeriodMonth {
					r.At(f.Value, "%s.period: %q is not day or month (calendar days and months in UTC)", what, v)
				}
				b.Period = v
			}
		case "max_cost_usd":
			maxima++
			if v, ok := Float(r, f.Value, what+".max_cost_usd"); ok {
				if v <= 0 {
					r.At(f.Value, "%s.max_cost_usd must be more than 0", what)
				}
				b.MaxCostUSD = v
			}
		case "max_tokens":
			maxima++
			if v, ok := Int(r, f.Value, what+".max_tokens"); ok {
				if v < 1 {
					r.At(f.Value, "%s.max_tokens must be at least 1", what)
				}
				b.MaxTokens = v
			}
		default:
			Unknown(r, f, what, budgetLimitFields)
		}
	}
	if m := Resolve(n); m != nil && m.Kind == yaml.MappingNode {
		if scopes != 1 {
			r.At(n, "%s needs exactly one of agent, model or plan: what it limits", what)
		}
		if b.Period == "" {
			r.At(n, "%s needs a period: day or month", what)
		}
		if maxima == 0 {
			r.At(n, "%s needs max_cost_usd or max_tokens", what)
		}
	}
	return b, len(r.List) == before
}

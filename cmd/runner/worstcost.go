package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/runs"
	"gopkg.in/yaml.v3"
)

// toolRounds is the most model calls an llm step visit makes when its
// agent may call tools: a first call and one per round of tool calls
// (internal/steps: maxToolRounds).
const toolRounds = 1 + 8

// worstCost writes what a run of plan could cost at most, before it
// runs: per llm step, its visits (1, or max_visits in a loop a goto
// makes) × the items of its for_each (when the list is a var's) × its
// calls per visit × the most one call may cost (its largest answer at
// its model's price, and its prompt as written); then what earlier runs
// of the plan saved under dir cost.
func worstCost(w io.Writer, plan *plans.Plan, vars map[string]any, dir string) {
	fmt.Fprintln(w, "worst-case cost (calls × largest answer × price; prompts as written, without what their templates add):")
	total, unbounded, unknown := 0.0, false, false
	var walk func(list []*plans.Step, mult int, why string)
	walk = func(list []*plans.Step, mult int, why string) {
		loop := loopSteps(list)
		for _, s := range list {
			m, how := mult, why
			if loop[s.Label] {
				v := s.MaxVisits
				if v <= 0 {
					v = plans.DefaultMaxVisits
				}
				m *= v
				how += fmt.Sprintf(" × %d visits (max_visits, in a loop)", v)
			}
			if s.ForEach != nil {
				n, ok := forEachLen(s.ForEach.Src, vars)
				if !ok {
					fmt.Fprintf(w, "  %s: unbounded: for_each over %s\n", s.Label, s.ForEach.Src)
					unbounded = true
					continue
				}
				m *= n
				how += fmt.Sprintf(" × %d items (for_each %s)", n, s.ForEach.Src)
			}
			if s.Type == "llm" {
				usd, ok := llmCeiling(w, plan, s, m, how)
				total += usd
				unknown = unknown || !ok
			}
			if s.Call != nil {
				fmt.Fprintf(w, "  %s: calls plan %s: its calls are not counted here\n", s.Label, s.Call.Path)
			}
			walk(s.Parallel, m, how)
			walk(s.Steps, m, how)
		}
	}
	// The loaded plan keeps no YAML nodes (a run does not need them): the
	// steps' own fields are read again from its source. The agents are
	// the loaded plan's, with this run's --agent changes.
	steps := plan.Steps
	if fresh, _ := plans.Parse(plan.Path, []byte(plan.Source)); fresh != nil {
		steps = fresh.Steps
	}
	walk(steps, 1, "")
	switch {
	case unbounded:
		fmt.Fprintf(w, "total: unbounded (%s at least)\n", board.FormatUSD(total))
	case unknown:
		fmt.Fprintf(w, "total: not known (%s at least)\n", board.FormatUSD(total))
	default:
		fmt.Fprintf(w, "total: up to %s\n", board.FormatUSD(total))
	}
	earlierCosts(w, plan, dir)
}

// llmCeiling writes the most llm step s may cost over m visits.
func llmCeiling(w io.Writer, plan *plans.Plan, s *plans.Step, m int, how string) (float64, bool) {
	var name, prompt string
	var withTools bool
	for _, f := range plans.Fields(&plans.Reporter{}, s.Node, "") {
		switch f.Key {
		case "agent":
			name = f.Value.Value
		case "prompt", "system":
			prompt += f.Value.Value
		case "tools", "spawn":
			withTools = true
		}
	}
	spec := plan.Agent(name)
	if spec == nil {
		fmt.Fprintf(w, "  %s: agent %s: not known\n", s.Label, name)
		return 0, false
	}
	calls := 1
	if withTools || len(spec.MCP) > 0 || len(spec.Tools) > 0 {
		calls = toolRounds
		how += fmt.Sprintf(" × %d calls (tool rounds)", calls)
	}
	usd, tokens, priced, bounded := agents.CallCeiling(spec, len(prompt))
	head := fmt.Sprintf("  %s: agent %s (%s %s)", s.Label, name, spec.Provider, spec.Model)
	switch {
	case !bounded:
		fmt.Fprintf(w, "%s: not known: the largest answer of model %s is not (set max_tokens on the agent)\n", head, spec.Model)
		return 0, false
	case !priced:
		fmt.Fprintf(w, "%s: not known: model %s has no price (give the agent a price:)\n", head, spec.Model)
		return 0, false
	}
	n := m * calls
	fmt.Fprintf(w, "%s: 1 call%s = %d calls × up to %d tokens × price = %s\n", head, how, n, tokens, board.FormatUSD(usd*float64(n)))
	return usd * float64(n), true
}

// loopSteps are the steps of a list that a goto of a later (or the
// same) step of it can send the run back to: they may run max_visits
// times.
func loopSteps(list []*plans.Step) map[string]bool {
	at := map[string]int{}
	for i, s := range list {
		at[s.Label] = i
	}
	out := map[string]bool{}
	for j, s := range list {
		for _, target := range gotos(s.Node) {
			if i, ok := at[target]; ok && i <= j {
				for _, l := range list[i : j+1] {
					out[l.Label] = true
				}
			}
		}
	}
	return out
}

// gotos are the labels a step's node names under goto: (a branch's
// cases and default, or any step's).
func gotos(n *yaml.Node) []string {
	var out []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil {
			return
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if (k.Value == "goto" || k.Value == "default") && v.Kind == yaml.ScalarNode {
					out = append(out, v.Value)
				}
				if k.Value == "cases" || k.Value == "goto" || k.Value == "default" {
					walk(v)
				}
			}
		}
		if n.Kind == yaml.SequenceNode {
			for _, c := range n.Content {
				walk(c)
			}
		}
	}
	walk(n)
	return out
}

// forEachLen is the number of items of a for_each over a var whose value
// is a list.
func forEachLen(src string, vars map[string]any) (int, bool) {
	name, ok := strings.CutPrefix(strings.TrimSpace(src), "vars.")
	if !ok {
		return 0, false
	}
	if l, ok := vars[name].([]any); ok {
		return len(l), true
	}
	return 0, false
}

// earlierCosts writes what the runs of plan saved under dir cost.
func earlierCosts(w io.Writer, plan *plans.Plan, dir string) {
	list, err := runs.List(dir)
	if err != nil {
		return
	}
	name := agents.PlanName(plan)
	var costs []float64
	for _, s := range list {
		if s.Error == "" && (s.Name == name || (s.Name == "" && s.Plan == plan.Path)) && s.Status != "running" {
			costs = append(costs, s.Usage.CostUSD)
		}
	}
	if len(costs) == 0 {
		fmt.Fprintf(w, "earlier runs of %s: none saved under %s\n", name, dir)
		return
	}
	sort.Float64s(costs)
	med := costs[len(costs)/2]
	if len(costs)%2 == 0 {
		med = (costs[len(costs)/2-1] + costs[len(costs)/2]) / 2
	}
	fmt.Fprintf(w, "earlier runs of %s (%d): min %s, median %s, max %s\n", name, len(costs),
		board.FormatUSD(costs[0]), board.FormatUSD(med), board.FormatUSD(costs[len(costs)-1]))
}

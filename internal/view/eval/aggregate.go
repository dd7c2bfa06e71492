package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
)

// Group is the figures of the runs one agent and model took part in.
type Group struct {
	Agent string `json:"agent"`
	Model string `json:"model"`
	Runs  int    `json:"runs"`
	// Succeeded: runs that ended succeeded; PassRate is their share.
	Succeeded int     `json:"succeeded"`
	PassRate  float64 `json:"pass_rate"`
	// ApplySteps counts apply_diff steps of those runs (each label once
	// per run); FirstTry those whose first visit applied.
	ApplySteps        int     `json:"apply_steps"`
	FirstTry          int     `json:"first_try"`
	FirstTryApplyRate float64 `json:"first_try_apply_rate"`
	// Calls, Tokens and CostUSD are this agent's and model's own, over
	// its steps in those runs.
	Calls   int     `json:"calls"`
	Tokens  int     `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
}

// Aggregate is a set of runs' figures per agent and model, and over all.
type Aggregate struct {
	Runs   int     `json:"runs"`
	All    Group   `json:"all"`
	Groups []Group `json:"groups"`
}

// Summarize gives the figures of boards. An agent and model count for a
// run when one of its llm steps answered with them (a fallback that took
// over counts as itself). types say which steps applied an edit
// (engine.ShowsEdit).
func Summarize(boards []*board.Board, types *engine.Registry) Aggregate {
	agg := Aggregate{Runs: len(boards), All: Group{Agent: "(all)", Model: "(all)"}, Groups: []Group{}}
	groups := map[[2]string]*Group{}
	for _, b := range boards {
		succeeded := b.Run().Status == board.StatusSucceeded
		applies, firstTry := applyFigures(b.Steps(), types)
		own := map[[2]string]*Group{}
		for _, r := range b.Steps() {
			var res struct {
				Agent string `json:"agent"`
				Model string `json:"model"`
				Calls int    `json:"calls"`
				Usage *struct {
					InputTokens  int     `json:"input_tokens"`
					OutputTokens int     `json:"output_tokens"`
					CostUSD      float64 `json:"cost_usd"`
				} `json:"usage"`
			}
			if json.Unmarshal(r.Result, &res) != nil || res.Agent == "" || res.Usage == nil {
				continue
			}
			k := [2]string{res.Agent, res.Model}
			g := own[k]
			if g == nil {
				g = &Group{}
				own[k] = g
			}
			g.Calls += res.Calls
			g.Tokens += res.Usage.InputTokens + res.Usage.OutputTokens
			g.CostUSD += res.Usage.CostUSD
		}
		add := func(g *Group, calls, tokens int, cost float64) {
			g.Runs++
			if succeeded {
				g.Succeeded++
			}
			g.ApplySteps += applies
			g.FirstTry += firstTry
			g.Calls += calls
			g.Tokens += tokens
			g.CostUSD += cost
		}
		var calls, tokens int
		var cost float64
		for k, o := range own {
			g := groups[k]
			if g == nil {
				g = &Group{Agent: k[0], Model: k[1]}
				groups[k] = g
			}
			add(g, o.Calls, o.Tokens, o.CostUSD)
			calls, tokens, cost = calls+o.Calls, tokens+o.Tokens, cost+o.CostUSD
		}
		add(&agg.All, calls, tokens, cost)
	}
	for _, g := range groups {
		agg.Groups = append(agg.Groups, *g)
	}
	sort.Slice(agg.Groups, func(i, j int) bool {
		a, b := agg.Groups[i], agg.Groups[j]
		if a.Agent != b.Agent {
			return a.Agent < b.Agent
		}
		return a.Model < b.Model
	})
	for i := range agg.Groups {
		agg.Groups[i].rates()
	}
	agg.All.rates()
	return agg
}

func (g *Group) rates() {
	if g.Runs > 0 {
		g.PassRate = float64(g.Succeeded) / float64(g.Runs)
	}
	if g.ApplySteps > 0 {
		g.FirstTryApplyRate = float64(g.FirstTry) / float64(g.ApplySteps)
	}
}

// applyFigures counts a run's steps that apply an edit (apply_diff), by
// label, and those whose first visit applied.
func applyFigures(recs []board.StepRecord, types *engine.Registry) (steps, firstTry int) {
	for _, r := range recs {
		if r.Visit == 1 && types.Caps(r.Type).Shows.Has(engine.ShowsEdit) {
			steps++
			if r.Status == board.StatusSucceeded {
				firstTry++
			}
		}
	}
	return steps, firstTry
}

// Table prints the figures, a row per agent and model, then all runs.
func (a Aggregate) Table(w io.Writer) {
	fmt.Fprintf(w, "%d runs\n\n", a.Runs)
	rows := [][]string{{"agent", "model", "runs", "pass rate", "first-try apply", "calls", "tokens", "cost"}}
	for _, g := range append(append([]Group{}, a.Groups...), a.All) {
		apply := "-"
		if g.ApplySteps > 0 {
			apply = fmt.Sprintf("%.0f%% (%d/%d)", 100*g.FirstTryApplyRate, g.FirstTry, g.ApplySteps)
		}
		rows = append(rows, []string{g.Agent, g.Model, fmt.Sprint(g.Runs), fmt.Sprintf("%.0f%% (%d/%d)", 100*g.PassRate, g.Succeeded, g.Runs),
			apply, fmt.Sprint(g.Calls), fmt.Sprint(g.Tokens), board.FormatUSD(g.CostUSD)})
	}
	table(w, rows)
}

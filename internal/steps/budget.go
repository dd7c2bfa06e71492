package steps

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
)

// A call a shared budget refuses, when the plan says budgets.on_exceed:
// ask, waits for a person as an input step does: the refusal is recorded
// (agents.KindBudget), the run saves and ends waiting, `runner answer
// --step LABEL/budget-N` (or serve, or the MCP server) answers the form
// below, and the resumed visit goes through its recorded calls again up
// to the refused one, which is then checked with the raise. The raise is
// the run's: every later call of the run has it, and a resumed run reads
// it again from the answers. N counts the visit's questions from 1.

// BudgetForm is the form of a budget question.
const BudgetForm = `{"type":"object","properties":{` +
	`"raise_usd":{"type":"number","description":"raise the budget for this run by this many dollars"},` +
	`"total_usd":{"type":"number","description":"or raise it for this run to this many dollars in all"},` +
	`"stop":{"type":"boolean","description":"or stop: the step fails with the budget's error"}}}`

// budgetMark is what follows a step's label in its budget questions'
// labels.
const budgetMark = "/budget-"

// BudgetLabel is the input label of budget question n of step label's
// visit.
func BudgetLabel(label string, n int) string { return label + budgetMark + strconv.Itoa(n) }

// IsBudgetQuestion reports whether an input label is a budget question
// of step label.
func IsBudgetQuestion(label, input string) bool {
	rest, ok := strings.CutPrefix(input, label+budgetMark)
	if !ok {
		return false
	}
	_, err := strconv.Atoi(rest)
	return err == nil
}

// budgetRaise is what the answers on the board add to the shared budgets
// for the run: each answer's raise counts from what was in force when
// its question was asked (or sets the budget it was about to a total);
// the largest counts.
func budgetRaise(recs []board.Recording) float64 {
	raise := 0.0
	for _, r := range recs {
		ref, ok := agents.DecodeBudgetRefusal(r)
		if !ok {
			continue
		}
		a, ok := FindAnswer(recs, ref.Input, r.Visit)
		if !ok {
			continue
		}
		if to, ok := raiseOf(ref, a.Answer); ok {
			raise = max(raise, to)
		}
	}
	return raise
}

// raiseOf is the raise answer ans gives after refusal ref; false: it
// gives none (stop, or no amount).
func raiseOf(ref agents.BudgetRefusal, ans map[string]any) (float64, bool) {
	if stop, _ := ans["stop"].(bool); stop {
		return 0, false
	}
	if by, ok := ans["raise_usd"].(float64); ok && by > 0 {
		return ref.RaisedUSD + by, true
	}
	if to, ok := ans["total_usd"].(float64); ok && to > ref.Exceeded.Budget.MaxCostUSD {
		return to - ref.Exceeded.Budget.MaxCostUSD, true
	}
	return 0, false
}

// budgetAsksOf reports whether the step visit has asked about a budget
// before.
func budgetAsksOf(sc *engine.StepContext) bool {
	for _, r := range sc.Board.Recordings() {
		if r.Kind == agents.KindBudget && r.Label == sc.Label && r.Visit == sc.Visit {
			return true
		}
	}
	return false
}

// askBudget is what a step does with be, a call a shared budget refused,
// when the plan says on_exceed: ask: engine.ErrWaiting while a person
// has not answered, be itself once they stopped it (or answered without
// a raise that helps). Budgets in tokens are not raised: be as it is.
func askBudget(sc *engine.StepContext, set *agents.Set, be *agents.BudgetError) error {
	if be.Shared == nil || set.OnExceed() != plans.OnExceedAsk || be.Shared.Budget.MaxCostUSD <= 0 ||
		be.Shared.SpentUSD+be.Shared.NextUSD <= be.Shared.Budget.MaxCostUSD {
		return be
	}
	raised := set.Raised()
	n := 0
	for _, r := range sc.Board.Recordings() {
		if r.Label != sc.Label || r.Visit != sc.Visit {
			continue
		}
		ref, ok := agents.DecodeBudgetRefusal(r)
		if !ok {
			continue
		}
		n = max(n, r.Call)
		if ref.Call != be.Call || ref.RaisedUSD != raised {
			continue
		}
		// Asked about already, with the same raise in force.
		if a, ok := FindAnswer(sc.Board.Recordings(), ref.Input, sc.Visit); ok {
			return budgetStopped(sc, be, ref.Input, a)
		}
		return engine.ErrWaiting
	}
	label := BudgetLabel(sc.Label, n+1)
	rec, err := agents.BudgetRefusalRecording(sc.Label, sc.Visit, n+1,
		agents.BudgetRefusal{Input: label, Call: be.Call, RaisedUSD: raised, Exceeded: be.Shared})
	if err != nil {
		return err
	}
	if err := sc.Board.AddRecording(rec); err != nil {
		return err
	}
	prompt := fmt.Sprintf("Step %s: %s.\nRaise the budget for this run (raise_usd: by so many dollars, or total_usd: to so many in all), or stop the step (stop: true)?",
		VisitName(sc.Label, sc.Visit), be.Error())
	if raised > 0 {
		prompt = fmt.Sprintf("Step %s: %s, with %s allowed this run beyond it already.\nRaise the budget for this run further (raise_usd: by so many dollars, or total_usd: to so many in all), or stop the step (stop: true)?",
			VisitName(sc.Label, sc.Visit), be.Error(), board.FormatUSD(raised))
	}
	w := board.WaitingInput{Label: label, Visit: sc.Visit, Since: sc.Now(), Form: []byte(BudgetForm), Prompt: prompt}
	if err := sc.Board.UpdateRun(func(r *board.Run) {
		r.Waiting = append(append([]board.WaitingInput(nil), r.Waiting...), w)
	}); err != nil {
		return err
	}
	sc.Log.Info().Str("input", label).Str("budget", be.Shared.Budget.Scope()).Msg("a model call waits for a person to raise a budget")
	return engine.ErrWaiting
}

// budgetStopped is be, the refusal a person answered with a that gives
// no raise: the step fails with the budget's error, saying who stopped
// it.
func budgetStopped(sc *engine.StepContext, be *agents.BudgetError, input string, a InputAnswer) error {
	if err := clearAsked(sc, IsBudgetQuestion); err != nil {
		return err
	}
	who := "a person"
	if a.By != "" {
		who = a.By
	}
	return fmt.Errorf("%w (%s stopped it at %s)", be, who, input)
}

package agents

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/budget"
)

// APIError is an error answer from a provider's API.
type APIError struct {
	Provider string // openai, anthropic
	Status   int    // HTTP status
	Type     string // the provider's error type (invalid_request_error...)
	Code     string // the provider's error code, when it sends one
	Message  string
	Retries  int // retries made before giving up (0: not retried)
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d", e.Provider, e.Status)
	if kind := e.Code; kind != "" || e.Type != "" {
		if kind == "" {
			kind = e.Type
		}
		b.WriteString(" " + kind)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Retries > 0 {
		fmt.Fprintf(&b, " (after %d retries)", e.Retries)
	}
	return b.String()
}

// Divergence is returned under replay when a call does not match the
// recording: the request changed (the prompt, the model, the tools...), or
// the run makes a call the recording does not have (Recorded is nil).
// Recorded and Now are canonical requests, for showing a diff.
type Divergence struct {
	Label    string
	Visit    int
	Call     int
	Recorded json.RawMessage
	Now      json.RawMessage
	// What, when set, says the divergence is an MCP exchange's (Call is
	// then its number among the visit's MCP exchanges): "tools/list of
	// MCP server fs", "call of tool read_file of MCP server fs".
	What string
}

func (d *Divergence) Error() string {
	if d.What != "" {
		// MCP exchanges and calls of the plan's tools share one numbering.
		ex := "MCP exchange"
		if !strings.Contains(d.What, "MCP server") {
			ex = "tool exchange"
		}
		if d.Recorded == nil {
			return fmt.Sprintf("replay diverged: step %s visit %d makes a %s (%s %d), which the recording does not have", d.Label, d.Visit, d.What, ex, d.Call)
		}
		return fmt.Sprintf("replay diverged: step %s visit %d %s %d is a %s, different from the recorded one", d.Label, d.Visit, ex, d.Call, d.What)
	}
	if d.Recorded == nil {
		return fmt.Sprintf("replay diverged: step %s visit %d makes model call %d, which the recording does not have", d.Label, d.Visit, d.Call)
	}
	return fmt.Sprintf("replay diverged: step %s visit %d model call %d sends a different request than recorded", d.Label, d.Visit, d.Call)
}

// BudgetError is returned before a call that the run's limits do not
// allow: a limit is reached (limits.max_tokens, limits.max_cost_usd), or
// the call could cross it. The call is not started.
type BudgetError struct {
	Limit int // limits.max_tokens (0: the cost limit is the one)
	Used  int // tokens used, and held by calls under way
	Held  int // of Used, what calls under way hold (their most)

	LimitUSD float64 // limits.max_cost_usd
	SpentUSD float64 // dollars spent and held
	NextUSD  float64 // the most the refused call could cost

	// The refused call, when it is one that could cross the limit
	// (Agent is "" when the limit is reached already).
	Agent, Model  string
	Input, Output int // its estimated input and largest answer, in tokens
	// Call is the number the refused call would have had in its step
	// visit (set when Shared is).
	Call int

	// Shared, when set, is the budget shared by every run on the machine
	// (budgets:) that the call would cross; it says why.
	Shared *budget.ExceededError
}

func (e *BudgetError) Error() string {
	if e.Shared != nil {
		return e.Shared.Error()
	}
	next := fmt.Sprintf("the next call (agent %s, model %s) could use up to %d tokens (about %d of input and an answer of up to %d)",
		e.Agent, e.Model, e.Input+e.Output, e.Input, e.Output)
	switch {
	case e.LimitUSD > 0 && e.Agent == "":
		return fmt.Sprintf("limits.max_cost_usd %s reached: %s spent", board.FormatUSD(e.LimitUSD), board.FormatUSD(e.SpentUSD))
	case e.LimitUSD > 0:
		return fmt.Sprintf("limits.max_cost_usd %s: %s, costing up to %s, and %s is spent: it was not started",
			board.FormatUSD(e.LimitUSD), next, board.FormatUSD(e.NextUSD), board.FormatUSD(e.SpentUSD))
	case e.Agent == "":
		return fmt.Sprintf("limits.max_tokens %d reached: %d tokens used", e.Limit, e.Used)
	}
	if e.Held > 0 {
		return fmt.Sprintf("limits.max_tokens %d: %s, and %d are used or held by calls under way (%d held): it was not started", e.Limit, next, e.Used, e.Held)
	}
	return fmt.Sprintf("limits.max_tokens %d: %s, and %d are used: it was not started", e.Limit, next, e.Used)
}

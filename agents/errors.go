package agents

import (
	"encoding/json"
	"fmt"
	"strings"
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
}

func (d *Divergence) Error() string {
	if d.Recorded == nil {
		return fmt.Sprintf("replay diverged: step %s visit %d makes model call %d, which the recording does not have", d.Label, d.Visit, d.Call)
	}
	return fmt.Sprintf("replay diverged: step %s visit %d model call %d sends a different request than recorded", d.Label, d.Visit, d.Call)
}

// BudgetError is returned before a call when the run's model calls have
// used up limits.max_tokens.
type BudgetError struct {
	Limit int
	Used  int
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("limits.max_tokens %d reached: %d tokens used", e.Limit, e.Used)
}

package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Elicitation is what a server asks a person during a tool call
// (elicitation/create).
type Elicitation struct {
	Server  string `json:"server"`
	Tool    string `json:"tool"` // the tool call it came during
	Mode    string `json:"mode"` // form or url
	Message string `json:"message"`
	// Schema is the flat JSON Schema of the fields asked (form mode).
	Schema json.RawMessage `json:"schema,omitempty"`
	URL    string          `json:"url,omitempty"` // url mode: where the person goes
}

// ElicitAnswer is what a person answered: Action accept (with Content,
// the fields; those left out take the schema's defaults), decline or
// cancel.
type ElicitAnswer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// ElicitFunc answers an elicitation. Its ctx is the call's: it ends
// when the call's bound does. An error stops the call it came during
// (see CallElicit).
type ElicitFunc func(ctx context.Context, e Elicitation) (ElicitAnswer, error)

// ErrCallStopped wraps the error of a tool call that its ElicitFunc
// stopped (to ask a person and go on later, say): neither an answer for
// the model nor a failure of the server.
var ErrCallStopped = errors.New("MCP tool call stopped to ask a person")

type stoppedError struct{ err error }

func (e *stoppedError) Error() string   { return e.err.Error() }
func (e *stoppedError) Unwrap() []error { return []error{ErrCallStopped, e.err} }

// elicit answers a server's elicitation/create. It goes to the tool call
// in flight; outside one, or while several are in flight (the protocol
// does not say which one asks), or when the call's caller gave no
// ElicitFunc, nobody can answer: the server is told cancel, the tool's
// result says why, and the log too.
func (c *Conn) elicit(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	p := req.Params
	e := Elicitation{Server: c.srv.Name, Mode: p.Mode, Message: p.Message, URL: p.URL}
	if e.Mode == "" {
		e.Mode = "form"
		if p.URL != "" {
			e.Mode = "url"
		}
	}
	if p.RequestedSchema != nil {
		b, err := json.Marshal(p.RequestedSchema)
		if err != nil {
			return nil, err
		}
		e.Schema = b
	}
	c.mu.Lock()
	var cl *call
	for k := range c.calls {
		cl = k
	}
	n := len(c.calls)
	c.mu.Unlock()
	why := ""
	switch {
	case n == 0:
		why = "outside a tool call"
	case n > 1:
		why = fmt.Sprintf("while %d tool calls were in flight (which one asks is not known)", n)
	case cl.elicit == nil:
		why = "and nobody can answer here"
	}
	if why != "" {
		note := fmt.Sprintf("the server asked a person %q %s: runner told it cancel", p.Message, why)
		c.log.Warn().Str("elicitation", p.Message).Msg("MCP server asked a person " + why + ": cancelled")
		if cl != nil {
			c.mu.Lock()
			cl.notes = append(cl.notes, note)
			c.mu.Unlock()
		}
		return &sdk.ElicitResult{Action: "cancel"}, nil
	}
	e.Tool = cl.tool
	a, err := cl.elicit(cl.ctx, e)
	if err != nil {
		c.mu.Lock()
		cl.stopped = err
		c.mu.Unlock()
		cl.cancel() // the call goes no further: it is made again once answered
		return &sdk.ElicitResult{Action: "cancel"}, nil
	}
	switch a.Action {
	case "accept":
		if a.Content == nil {
			a.Content = map[string]any{} // so that the SDK fills in the defaults
		}
	case "decline", "cancel":
		a.Content = nil
	default:
		return nil, fmt.Errorf("elicitation answer: action must be accept, decline or cancel, got %q", a.Action)
	}
	return &sdk.ElicitResult{Action: a.Action, Content: a.Content}, nil
}

package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// The OpenAI Responses API (POST /responses): the API OpenAI's newest
// models need, the codex models only speak, and that carries a reasoning
// model's reasoning from one turn to the next. runner asks for it
// stateless (store: false, no previous_response_id): every call sends the
// whole conversation, reasoning items included with their encrypted
// content, so a recording holds everything that decided the answer and
// a replay or a resumed run sends the same bytes.

type rsRequest struct {
	Model           string       `json:"model"`
	Instructions    string       `json:"instructions,omitempty"`
	Input           []any        `json:"input"`
	Tools           []rsTool     `json:"tools,omitempty"`
	MaxOutputTokens int          `json:"max_output_tokens,omitempty"`
	Temperature     *float64     `json:"temperature,omitempty"`
	Reasoning       *rsReasoning `json:"reasoning,omitempty"`
	Text            *rsText      `json:"text,omitempty"`
	PromptCacheKey  string       `json:"prompt_cache_key,omitempty"`
	Store           bool         `json:"store"`
	Include         []string     `json:"include,omitempty"`
	Stream          bool         `json:"stream,omitempty"`
}

type rsTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

type rsReasoning struct {
	Effort string `json:"effort,omitempty"`
}

type rsText struct {
	Format struct {
		Type   string          `json:"type"`
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict bool            `json:"strict"`
	} `json:"format"`
}

// Input items.
type rsMessage struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content string `json:"content"`
}

type rsFunctionCall struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type rsFunctionOutput struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

// rsResponse is a response object: the answer of a call, and the payload
// of a stream's response.completed and response.incomplete events.
type rsResponse struct {
	Model             string            `json:"model"`
	Status            string            `json:"status"`
	Output            []json.RawMessage `json:"output"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Usage *struct {
		InputTokens        int `json:"input_tokens"`
		InputTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int `json:"output_tokens"`
		OutputTokensDetails *struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

type rsItem struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
	CallID    string `json:"call_id"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func (p *openAI) completeResponses(ctx context.Context, c *callInfo, req *Request) (*Response, int, error) {
	stream := p.spec().Stream
	w := p.responsesWire(req)
	w.Stream = stream
	body, err := json.Marshal(w)
	if err != nil {
		return nil, 0, fmt.Errorf("openai: %w", err)
	}
	x := &exchange{provider: "openai", log: c.log,
		url: p.baseURL + "/responses", header: p.header(stream), body: body, timeout: p.agent.Timeout, agent: p.agent.Name,
		mask: p.mask, apiError: openAIError}
	if stream {
		delta := p.delta(c)
		x.stream = func(r io.Reader) ([]byte, int, error) { return readResponsesStream(r, delta) }
	}
	data, retries, err := p.t.post(ctx, x)
	if err != nil {
		return nil, retries, err
	}
	resp, err := parseResponses(data)
	return resp, retries, err
}

func (p *openAI) responsesWire(req *Request) *rsRequest {
	w := &rsRequest{Model: req.Model, Instructions: req.System, Temperature: req.Temperature,
		MaxOutputTokens: req.MaxTokens, PromptCacheKey: p.spec().PromptCacheKey,
		// Stateless: reasoning comes back encrypted, to be sent again.
		Store: false, Include: []string{"reasoning.encrypted_content"}}
	if req.ReasoningEffort != "" {
		w.Reasoning = &rsReasoning{Effort: req.ReasoningEffort}
		// Reasoning models refuse a temperature (400, "Unsupported
		// parameter"): an agent that sets an effort is one.
		w.Temperature = nil
	}
	w.Input = []any{}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleTool:
			w.Input = append(w.Input, rsFunctionOutput{Type: "function_call_output", CallID: m.ToolCallID, Output: m.Content})
		case RoleAssistant:
			// The reasoning first: it belongs to the message and the
			// calls it led to.
			for _, r := range m.Reasoning {
				w.Input = append(w.Input, r)
			}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				w.Input = append(w.Input, rsMessage{Type: "message", Role: RoleAssistant, Content: m.Content})
			}
			for _, tc := range m.ToolCalls {
				args := normalizeArgs(tc.Args)
				var s string
				if json.Unmarshal(args, &s) != nil {
					s = string(args)
				}
				w.Input = append(w.Input, rsFunctionCall{Type: "function_call", CallID: tc.ID, Name: tc.Name, Arguments: s})
			}
		default:
			w.Input = append(w.Input, rsMessage{Type: "message", Role: m.Role, Content: m.Content})
		}
	}
	for _, t := range req.Tools {
		w.Tools = append(w.Tools, rsTool{Type: "function", Name: t.Name, Description: t.Description,
			Parameters: t.Parameters, Strict: strictSchema(t.Parameters)})
	}
	if len(req.Schema) > 0 {
		w.Text = &rsText{}
		w.Text.Format.Type, w.Text.Format.Name, w.Text.Format.Schema = "json_schema", "answer", req.Schema
		w.Text.Format.Strict = strictSchema(req.Schema)
	}
	return w
}

// parseResponses reads a response object.
func parseResponses(data []byte) (*Response, error) {
	var r rsResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("openai: malformed answer (%v): %s", err, errorBody(200, data))
	}
	return r.response(data)
}

// response is the neutral form of a finished response object: the text
// of its message items, its function calls, its reasoning items as they
// came, its usage, and why it ended (status, incomplete_details).
func (r *rsResponse) response(data []byte) (*Response, error) {
	switch r.Status {
	case "failed":
		msg := "the response failed"
		if r.Error != nil {
			msg = r.Error.Message + " (" + r.Error.Code + ")"
		}
		return nil, &APIError{Provider: "openai", Status: 200, Type: "response_failed", Message: msg}
	case "completed", "incomplete", "":
		// "": a compatible server that leaves the status out answered.
	default:
		return nil, fmt.Errorf("openai: the answer's status is %q, not completed: %s", r.Status, errorBody(200, data))
	}
	out := &Response{Model: r.Model, FinishReason: "stop"}
	var text, refusal strings.Builder
	for _, raw := range r.Output {
		var it rsItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, fmt.Errorf("openai: malformed output item (%v): %s", err, errorBody(200, raw))
		}
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				switch c.Type {
				case "output_text":
					text.WriteString(c.Text)
				case "refusal":
					refusal.WriteString(c.Refusal)
				}
			}
		case "reasoning":
			var b bytes.Buffer
			if json.Compact(&b, raw) == nil {
				out.Reasoning = append(out.Reasoning, b.Bytes())
			}
		case "function_call":
			id := it.CallID
			if id == "" {
				id = fmt.Sprintf("call_%d", len(out.ToolCalls)+1)
			}
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: id, Name: it.Name, Args: normalizeArgs(json.RawMessage(it.Arguments))})
		}
	}
	out.Text = text.String()
	switch {
	case r.Status == "incomplete":
		reason := ""
		if r.IncompleteDetails != nil {
			reason = r.IncompleteDetails.Reason
		}
		switch reason {
		case "max_output_tokens":
			out.FinishReason = "length"
		case "content_filter":
			out.FinishReason = "content_filter"
		default:
			// Incomplete for a reason we do not know: cut, all the same.
			out.FinishReason = "length"
		}
	case out.Text == "" && refusal.Len() > 0:
		out.Text, out.FinishReason = refusal.String(), "content_filter"
	case len(out.ToolCalls) > 0:
		out.FinishReason = "tool_calls"
	}
	if u := r.Usage; u != nil {
		out.Usage = Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
		if u.InputTokensDetails != nil {
			out.Usage.CacheReadInputTokens = u.InputTokensDetails.CachedTokens
		}
		if u.OutputTokensDetails != nil {
			out.Usage.ReasoningTokens = u.OutputTokensDetails.ReasoningTokens
		}
	}
	return out, nil
}

// rsEvent is one event of a streamed response: its type, and the fields
// runner reads of the types it reads.
type rsEvent struct {
	Type     string          `json:"type"`
	Delta    string          `json:"delta"`
	Response json.RawMessage `json:"response"`
	// An error event's.
	Code    any    `json:"code"`
	Message string `json:"message"`
}

// readResponsesStream reads a streamed response and returns the response
// object of its terminal event (response.completed or
// response.incomplete), which is what the non-streamed answer is, so the
// two cannot differ and a recording does not say whether the answer
// streamed. output_text deltas go to delta (nil: nowhere) as they come.
// response.failed and error events are returned as an error body with
// the status the API gives that error otherwise (a server error or rate
// limit is retried). Every other event type (output items and content
// parts added and done, reasoning summaries, function-call argument
// deltas...) is a step on the way the terminal event sums up. A stream
// that ends before a terminal event was cut, an error.
func readResponsesStream(r io.Reader, delta func(string)) ([]byte, int, error) {
	var body []byte
	status := 0
	err := readSSE(r, func(ev sseEvent) error {
		if body != nil {
			return nil
		}
		data := []byte(ev.Data)
		var e rsEvent
		if err := json.Unmarshal(data, &e); err != nil {
			return fmt.Errorf("a malformed event in the stream (%v): %s", err, errorBody(200, data))
		}
		if e.Type == "" {
			e.Type = ev.Type
		}
		switch e.Type {
		case "response.output_text.delta":
			if delta != nil && e.Delta != "" {
				delta(e.Delta)
			}
		case "response.completed", "response.incomplete":
			if len(e.Response) == 0 || string(e.Response) == "null" {
				return fmt.Errorf("a %s event without its response: %s", e.Type, errorBody(200, data))
			}
			body, status = e.Response, 200
		case "response.failed":
			var resp rsResponse
			msg, code := "the response failed", ""
			if json.Unmarshal(e.Response, &resp) == nil && resp.Error != nil {
				msg, code = resp.Error.Message, resp.Error.Code
			}
			body, status = rsErrorBody("response_failed", code, msg), openAIStreamErrorStatus(code)
		case "error":
			code := ""
			if e.Code != nil {
				code = fmt.Sprint(e.Code)
			}
			body, status = rsErrorBody("error", code, e.Message), openAIStreamErrorStatus(code)
		}
		return nil
	})
	switch {
	case body != nil:
		return body, status, nil
	case err != nil:
		return nil, 0, err
	}
	return nil, 0, errStreamCut
}

// rsErrorBody is an error event of a stream as the API's error body, which
// openAIError reads.
func rsErrorBody(kind, code, msg string) []byte {
	var e oaError
	e.Error = &struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	}{msg, kind, code}
	if code == "" {
		e.Error.Code = nil
	}
	out, _ := json.Marshal(&e)
	return out
}

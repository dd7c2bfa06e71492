package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/sys/mask"
)

// DefaultOpenAIBaseURL is where the openai provider goes without base_url.
const DefaultOpenAIBaseURL = "https://api.openai.com/v1"

// openAI speaks OpenAI's Responses API (openai_responses.go) or the Chat
// Completions API, which OpenAI and most local servers (Ollama, vLLM,
// llama.cpp, LM Studio, OpenRouter) implement; the agent's `api` chooses,
// and by default OpenAI's own API gets the Responses API, any other
// server Chat Completions.
type openAI struct {
	t       *transport
	agent   *Agent
	baseURL string
	key     string
	mask    *mask.Masker // the key, and the run's other secrets
}

type oaRequest struct {
	Model    string      `json:"model"`
	Messages []oaMessage `json:"messages"`
	Tools    []oaTool    `json:"tools,omitempty"`
	// MaxTokens is what local servers know; api.openai.com wants
	// max_completion_tokens (its reasoning models reject max_tokens).
	MaxTokens           int               `json:"max_tokens,omitempty"`
	MaxCompletionTokens int               `json:"max_completion_tokens,omitempty"`
	Temperature         *float64          `json:"temperature,omitempty"`
	Seed                *int              `json:"seed,omitempty"`
	ResponseFormat      *oaResponseFormat `json:"response_format,omitempty"`
	ReasoningEffort     string            `json:"reasoning_effort,omitempty"`
	PromptCacheKey      string            `json:"prompt_cache_key,omitempty"`
	Stream              bool              `json:"stream,omitempty"`
	// StreamOptions asks for the usage, in a last chunk of its own.
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
}

type oaMessage struct {
	Role       string       `json:"role"`
	Content    *string      `json:"content"` // null for an assistant turn that only calls tools
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type oaTool struct {
	Type     string     `json:"type"`
	Function oaFunction `json:"function"`
}

type oaFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type oaToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
		// Arguments is a JSON document inside a string. Some servers send
		// the object itself; decoding into RawMessage accepts both.
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type oaResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict bool            `json:"strict"`
	} `json:"json_schema"`
}

type oaResponse struct {
	Model   string     `json:"model"`
	Choices []oaChoice `json:"choices"`
	// Usage is missing from many local servers' answers.
	Usage *oaUsage `json:"usage"`
}

type oaChoice struct {
	Message struct {
		// Content is a string, null, or (at a few servers) a list of
		// {type: text, text} parts.
		Content   json.RawMessage `json:"content"`
		Refusal   *string         `json:"refusal"`
		ToolCalls []oaToolCall    `json:"tool_calls"`
	} `json:"message"`
	FinishReason string `json:"finish_reason"`
}

type oaUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (u *oaUsage) usage() Usage {
	if u == nil {
		return Usage{}
	}
	out := Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if u.PromptTokensDetails != nil {
		out.CacheReadInputTokens = u.PromptTokensDetails.CachedTokens
	}
	if u.CompletionTokensDetails != nil {
		out.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	}
	return out
}

type oaError struct {
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		// Code is a string at OpenAI, a number at some local servers.
		Code any `json:"code"`
	} `json:"error"`
}

func (p *openAI) complete(ctx context.Context, c *callInfo, req *Request) (*Response, int, error) {
	if p.api() == plans.APIResponses {
		return p.completeResponses(ctx, c, req)
	}
	w := p.wire(req)
	stream := p.spec().Stream
	if stream {
		w.Stream = true
		w.StreamOptions = &struct {
			IncludeUsage bool `json:"include_usage"`
		}{true}
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, 0, fmt.Errorf("openai: %w", err)
	}
	x := &exchange{provider: "openai", log: c.log,
		url: p.baseURL + "/chat/completions", header: p.header(stream), body: body, timeout: p.agent.Timeout, agent: p.agent.Name,
		mask: p.mask, apiError: openAIError}
	if stream {
		delta := p.delta(c)
		x.stream = func(r io.Reader) ([]byte, int, error) { return readChatStream(r, delta) }
	}
	data, retries, err := p.t.post(ctx, x)
	if err != nil {
		return nil, retries, err
	}
	resp, err := parseOpenAI(data)
	return resp, retries, err
}

// delta is where a streamed answer's text goes as it comes, masked
// (nil: nowhere).
func (p *openAI) delta(c *callInfo) func(string) {
	if c.delta == nil {
		return nil
	}
	return func(text string) { c.delta(p.mask.String(text)) }
}

// header is the HTTP header of a call; stream: the answer comes as
// server-sent events.
func (p *openAI) header(stream bool) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	if stream {
		h.Set("Accept", "text/event-stream")
	}
	if p.key != "" {
		h.Set("Authorization", "Bearer "+p.key)
	}
	return h
}

// spec is the agent's plan entry (an empty one for an agent built
// without a plan).
func (p *openAI) spec() *plans.Agent {
	if p.agent == nil || p.agent.Spec == nil {
		return &plans.Agent{}
	}
	return p.agent.Spec
}

// api is the wire API the agent speaks: as its `api` says, else the
// Responses API at OpenAI and Chat Completions at any other server (the
// compatible servers implement Chat Completions; few have /responses).
func (p *openAI) api() string {
	if a := p.spec().API; a != "" {
		return a
	}
	if p.official() {
		return plans.APIResponses
	}
	return plans.APIChat
}

func (p *openAI) wire(req *Request) *oaRequest {
	w := &oaRequest{Model: req.Model, Temperature: req.Temperature, Seed: req.Seed,
		ReasoningEffort: req.ReasoningEffort, PromptCacheKey: p.spec().PromptCacheKey}
	if req.ReasoningEffort != "" {
		w.Temperature = nil // reasoning models refuse one (see responsesWire)
	}
	if p.official() {
		w.MaxCompletionTokens = req.MaxTokens
	} else {
		w.MaxTokens = req.MaxTokens
	}
	if req.System != "" {
		w.Messages = append(w.Messages, oaMessage{Role: "system", Content: &req.System})
	}
	for _, m := range req.Messages {
		om := oaMessage{Role: m.Role, ToolCallID: m.ToolCallID}
		content := m.Content
		if m.Role != RoleAssistant || content != "" || len(m.ToolCalls) == 0 {
			om.Content = &content
		}
		for _, tc := range m.ToolCalls {
			var w oaToolCall
			w.ID, w.Type = tc.ID, "function"
			w.Function.Name = tc.Name
			args := normalizeArgs(tc.Args)
			if !isJSONString(args) {
				// The API wants the arguments as a string of JSON.
				args, _ = json.Marshal(string(args))
			}
			w.Function.Arguments = args
			om.ToolCalls = append(om.ToolCalls, w)
		}
		w.Messages = append(w.Messages, om)
	}
	for _, t := range req.Tools {
		w.Tools = append(w.Tools, oaTool{Type: "function", Function: oaFunction(t)})
	}
	if len(req.Schema) > 0 {
		rf := &oaResponseFormat{Type: "json_schema"}
		rf.JSONSchema.Name = "answer"
		rf.JSONSchema.Schema = req.Schema
		// strict mode is refused (400) for schemas that do not close every
		// object and require every property; ask for it only when it holds.
		rf.JSONSchema.Strict = strictSchema(req.Schema)
		w.ResponseFormat = rf
	}
	return w
}

// official reports whether the base URL is OpenAI's own API.
func (p *openAI) official() bool {
	u, err := url.Parse(p.baseURL)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

func parseOpenAI(data []byte) (*Response, error) {
	var r oaResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("openai: malformed answer (%v): %s", err, errorBody(200, data))
	}
	if len(r.Choices) == 0 {
		return nil, fmt.Errorf("openai: the answer has no choices: %s", errorBody(200, data))
	}
	ch := r.Choices[0]
	out := &Response{Model: r.Model, FinishReason: normalizeFinish(ch.FinishReason)}
	out.Text = contentText(ch.Message.Content)
	if out.Text == "" && ch.Message.Refusal != nil && *ch.Message.Refusal != "" {
		out.Text, out.FinishReason = *ch.Message.Refusal, "content_filter"
	}
	for i, tc := range ch.Message.ToolCalls {
		args := tc.Function.Arguments
		var s string
		if json.Unmarshal(args, &s) == nil {
			args = json.RawMessage(s)
		}
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i+1) // some local servers omit it
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: id, Name: tc.Function.Name, Args: normalizeArgs(args)})
	}
	out.Usage = r.Usage.usage()
	return out, nil
}

// contentText reads a message's content: a string, or the text of a list
// of parts; anything else is no text.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" || p.Type == "" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func openAIError(status int, body []byte) *APIError {
	e := &APIError{Provider: "openai", Status: status}
	var r oaError
	if json.Unmarshal(body, &r) == nil && r.Error != nil && r.Error.Message != "" {
		e.Message, e.Type = r.Error.Message, r.Error.Type
		switch c := r.Error.Code.(type) {
		case string:
			e.Code = c
		case float64:
			e.Code = fmt.Sprint(c)
		}
		return e
	}
	e.Message = errorBody(status, body)
	return e
}

func isJSONString(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '"' }

// normalizeFinish maps providers' finish reasons onto one vocabulary, so a
// plan can test steps.x.finish_reason == "length" whatever the provider.
func normalizeFinish(s string) string {
	switch s {
	case "end_turn", "stop_sequence", "stop":
		return "stop"
	case "max_tokens", "length":
		return "length"
	case "tool_use", "tool_calls", "function_call":
		return "tool_calls"
	case "refusal", "content_filter":
		return "content_filter"
	}
	return s
}

// strictSchema reports whether a JSON Schema meets OpenAI's strict mode:
// every object lists all its properties as required and allows no others.
func strictSchema(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	return strictNode(v)
}

func strictNode(v any) bool {
	switch n := v.(type) {
	case map[string]any:
		if props, ok := n["properties"].(map[string]any); ok || n["type"] == "object" {
			if ap, ok := n["additionalProperties"].(bool); !ok || ap {
				return false
			}
			req := map[string]bool{}
			if l, ok := n["required"].([]any); ok {
				for _, r := range l {
					if s, ok := r.(string); ok {
						req[s] = true
					}
				}
			}
			for k := range props {
				if !req[k] {
					return false
				}
			}
		}
		for _, c := range n {
			if !strictNode(c) {
				return false
			}
		}
	case []any:
		for _, c := range n {
			if !strictNode(c) {
				return false
			}
		}
	}
	return true
}

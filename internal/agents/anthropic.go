package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/planrunner/runner/internal/sys/mask"
)

// DefaultAnthropicBaseURL is where the anthropic provider goes without base_url.
const DefaultAnthropicBaseURL = "https://api.anthropic.com"

// DefaultAnthropicMaxTokens is sent when the agent sets no max_tokens: the
// Messages API requires the field.
const DefaultAnthropicMaxTokens = 4096

// anthropicVersion is the API version header the wire format below follows.
const anthropicVersion = "2023-06-01"

// anthropic speaks the Anthropic Messages API.
type anthropic struct {
	t       *transport
	agent   *Agent
	baseURL string
	key     string
	mask    *mask.Masker // the key, and the run's other secrets
}

type anRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	// System is a string, or text blocks when a cache breakpoint ends it.
	System       any             `json:"system,omitempty"`
	Messages     []anMessage     `json:"messages"`
	Tools        []anTool        `json:"tools,omitempty"`
	Temperature  *float64        `json:"temperature,omitempty"`
	Thinking     *anThinking     `json:"thinking,omitempty"`
	OutputConfig *anOutputConfig `json:"output_config,omitempty"`
	Stream       bool            `json:"stream,omitempty"`
}

type anThinking struct {
	Type         string `json:"type"` // enabled
	BudgetTokens int    `json:"budget_tokens"`
}

// anOutputConfig asks for structured output: the answer's text is JSON
// matching the schema.
type anOutputConfig struct {
	Format struct {
		Type   string          `json:"type"` // json_schema
		Schema json.RawMessage `json:"schema"`
	} `json:"format"`
}

// anCache marks the end of a prompt prefix the API may cache.
type anCache struct {
	Type string `json:"type"` // ephemeral: the 5-minute cache
}

type anMessage struct {
	Role    string    `json:"role"` // user or assistant
	Content []anBlock `json:"content"`
}

// anBlock is a content block: text, tool_use, tool_result, thinking or
// redacted_thinking.
type anBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      string          `json:"content,omitempty"`
	IsError      bool            `json:"is_error,omitempty"`
	Thinking     string          `json:"thinking,omitempty"`
	Signature    string          `json:"signature,omitempty"`
	Data         string          `json:"data,omitempty"`
	CacheControl *anCache        `json:"cache_control,omitempty"`
}

type anTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	Strict       bool            `json:"strict,omitempty"`
	CacheControl *anCache        `json:"cache_control,omitempty"`
}

type anResponse struct {
	Type       string    `json:"type"`
	Model      string    `json:"model"`
	Content    []anBlock `json:"content"`
	StopReason string    `json:"stop_reason"`
	Usage      *anUsage  `json:"usage"`
}

type anUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

type anError struct {
	Type  string `json:"type"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func (p *anthropic) complete(ctx context.Context, c *callInfo, req *Request) (*Response, int, error) {
	w := p.wire(req)
	w.Stream = p.agent.Spec.Stream
	body, err := json.Marshal(w)
	if err != nil {
		return nil, 0, fmt.Errorf("anthropic: %w", err)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	h.Set("anthropic-version", anthropicVersion)
	h.Set("x-api-key", p.key)
	x := &exchange{provider: "anthropic", log: c.log,
		url: p.baseURL + "/v1/messages", header: h, body: body, timeout: p.agent.Timeout, agent: p.agent.Name,
		mask: p.mask, apiError: anthropicError}
	if w.Stream {
		h.Set("Accept", "text/event-stream")
		var delta func(string)
		if c.delta != nil {
			delta = func(text string) { c.delta(p.mask.String(text)) }
		}
		x.stream = func(r io.Reader) ([]byte, int, error) { return readAnthropicStream(r, delta) }
	}
	data, retries, err := p.t.post(ctx, x)
	if err != nil {
		return nil, retries, err
	}
	resp, err := parseAnthropic(data)
	return resp, retries, err
}

func (p *anthropic) wire(req *Request) *anRequest {
	w := &anRequest{Model: req.Model, MaxTokens: req.MaxTokens, System: req.System, Temperature: req.Temperature}
	if w.MaxTokens == 0 {
		w.MaxTokens = DefaultAnthropicMaxTokens
	}
	native := anthropicStructured(req.Model)
	system := req.System
	if req.Thinking > 0 {
		w.Thinking = &anThinking{Type: "enabled", BudgetTokens: req.Thinking}
		if req.MaxTokens == 0 {
			w.MaxTokens += req.Thinking // the budget comes out of max_tokens
		}
	}
	switch {
	case len(req.Schema) == 0:
	case native && strictCapable(req.Schema):
		w.OutputConfig = &anOutputConfig{}
		w.OutputConfig.Format.Type, w.OutputConfig.Format.Schema = "json_schema", req.Schema
	default:
		// A model without structured output, or a schema it cannot
		// enforce: say it in the system prompt; the llm step validates
		// the answer either way.
		system = strings.TrimSpace(system + "\n\nAnswer with only a JSON value (no prose, no code fence) that matches this JSON Schema:\n" + string(req.Schema))
	}
	if system != "" {
		w.System = system
	}
	// ends[i]: the wire message that request message i ended in (-1:
	// none), for the cache breakpoints.
	ends := make([]int, len(req.Messages))
	for i, m := range req.Messages {
		ends[i] = -1
		if i > 0 {
			ends[i] = ends[i-1]
		}
		role, blocks := "user", []anBlock(nil)
		switch m.Role {
		case RoleAssistant:
			role = "assistant"
			// Thinking goes back first, signed as it came: the API
			// requires it on the turn whose tool calls are being answered
			// and ignores it on earlier turns.
			if req.Thinking > 0 {
				for _, t := range m.Thinking {
					if t.Redacted != "" {
						blocks = append(blocks, anBlock{Type: "redacted_thinking", Data: t.Redacted})
					} else {
						blocks = append(blocks, anBlock{Type: "thinking", Thinking: t.Text, Signature: t.Signature})
					}
				}
			}
			if m.Content != "" {
				blocks = append(blocks, anBlock{Type: "text", Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				input := normalizeArgs(tc.Args)
				if _, ok := argsObject(input); !ok {
					input = json.RawMessage(`{}`) // the API insists on an object
				}
				blocks = append(blocks, anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: input})
			}
		case RoleTool:
			blocks = append(blocks, anBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content, IsError: m.IsError})
		default:
			blocks = append(blocks, anBlock{Type: "text", Text: m.Content})
		}
		if len(blocks) == 0 {
			continue
		}
		// Tool results and a following user text belong to one user turn:
		// the API wants every tool_result of a turn in the message right
		// after the tool_use, tool results first (which their order keeps).
		if n := len(w.Messages); n > 0 && w.Messages[n-1].Role == role {
			w.Messages[n-1].Content = append(w.Messages[n-1].Content, blocks...)
		} else {
			w.Messages = append(w.Messages, anMessage{Role: role, Content: blocks})
		}
		ends[i] = len(w.Messages) - 1
	}
	for _, t := range req.Tools {
		w.Tools = append(w.Tools, anTool{Name: t.Name, Description: t.Description, InputSchema: t.Parameters,
			Strict: native && strictCapable(t.Parameters)})
	}
	placeCacheBreakpoints(w, req, ends)
	return w
}

func parseAnthropic(data []byte) (*Response, error) {
	var r anResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("anthropic: malformed answer (%v): %s", err, errorBody(200, data))
	}
	if r.Type != "" && r.Type != "message" {
		return nil, fmt.Errorf("anthropic: unexpected answer of type %q: %s", r.Type, errorBody(200, data))
	}
	out := &Response{Model: r.Model, FinishReason: anthropicFinish(r.StopReason)}
	var text []string
	for _, b := range r.Content {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Args: normalizeArgs(b.Input)})
		case "thinking":
			// Not part of the answer, but kept: the next turn of a tool
			// loop must send it back.
			out.Thinking = append(out.Thinking, Thinking{Text: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			out.Thinking = append(out.Thinking, Thinking{Redacted: b.Data})
		}
	}
	out.Text = strings.Join(text, "")
	if u := r.Usage; u != nil {
		out.Usage = Usage{
			InputTokens:              u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
			OutputTokens:             u.OutputTokens,
			CacheCreationInputTokens: u.CacheCreationInputTokens,
			CacheReadInputTokens:     u.CacheReadInputTokens,
		}
	}
	return out, nil
}

func anthropicError(status int, body []byte) *APIError {
	e := &APIError{Provider: "anthropic", Status: status}
	var r anError
	if json.Unmarshal(body, &r) == nil && r.Error != nil && r.Error.Message != "" {
		e.Type, e.Message = r.Error.Type, r.Error.Message
		return e
	}
	e.Message = errorBody(status, body)
	return e
}

// anthropicFinish normalises a stop_reason: max_tokens, and a context
// window the answer filled, are an answer cut at the limit ("length").
func anthropicFinish(s string) string {
	if s == "model_context_window_exceeded" {
		return "length"
	}
	return normalizeFinish(s)
}

// anthropicStructured reports whether a model has structured output and
// strict tool use: Claude models from 4.5 on. Others (older models, a
// compatible server's own) get the schema in the system prompt.
func anthropicStructured(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	parts := strings.Split(m, "-")
	if len(parts) < 3 || parts[0] != "claude" {
		return false
	}
	if _, err := strconv.Atoi(parts[1]); err == nil {
		return false // claude-3-5-sonnet: the version before the family, the older naming
	}
	major, err := strconv.Atoi(parts[2])
	if err != nil {
		return false
	}
	minor := 0
	if len(parts) > 3 && len(parts[3]) <= 2 { // not a date
		minor, _ = strconv.Atoi(parts[3])
	}
	return major > 4 || major == 4 && minor >= 5
}

// strictCapable reports whether the API can enforce a JSON Schema: an
// object whose every object schema closes its properties
// (additionalProperties: false), as structured output requires.
func strictCapable(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	root, ok := v.(map[string]any)
	return ok && root["type"] == "object" && closedObjects(v)
}

func closedObjects(v any) bool {
	switch n := v.(type) {
	case map[string]any:
		if n["type"] == "object" || n["properties"] != nil {
			if ap, ok := n["additionalProperties"].(bool); !ok || ap {
				return false
			}
		}
		for _, c := range n {
			if !closedObjects(c) {
				return false
			}
		}
	case []any:
		for _, c := range n {
			if !closedObjects(c) {
				return false
			}
		}
	}
	return true
}

// anthropicCacheMin is the shortest prefix, in tokens, a model caches
// (Anthropic's prompt caching guide); a breakpoint before it is ignored.
func anthropicCacheMin(model string) int {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "claude-3-haiku"), strings.Contains(m, "claude-3-5-haiku"):
		return 2048
	case strings.Contains(m, "claude-opus-4-5"), strings.Contains(m, "claude-haiku-4-5"):
		return 4096
	}
	return 1024
}

// placeCacheBreakpoints marks the stable prefix of a request for the
// API's prompt cache (at most four breakpoints): the end of the tools,
// of the system prompt, of the agent's memory, and, when the
// conversation goes on (tools, memory, or a turn already answered), of
// the whole request, so the next call of a tool loop reads it back. A
// mark comes only where the prefix up to it is long enough to be cached
// (tokens estimated at 4 bytes each); a cached read costs a tenth of
// input, a write a quarter more, so a one-shot call marks no more than
// its tools and system prompt.
func placeCacheBreakpoints(w *anRequest, req *Request, ends []int) {
	min := anthropicCacheMin(req.Model) * 4 // in bytes
	size := 0
	for _, t := range req.Tools {
		size += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	if n := len(w.Tools); n > 0 && size >= min {
		w.Tools[n-1].CacheControl = &anCache{Type: "ephemeral"}
	}
	if sys, _ := w.System.(string); sys != "" {
		size += len(sys)
		if size >= min {
			w.System = []anBlock{{Type: "text", Text: sys, CacheControl: &anCache{Type: "ephemeral"}}}
		}
	}
	mark := func(upto int) { // after request messages [0, upto)
		for _, m := range req.Messages[:upto] {
			size += len(m.Content)
			for _, tc := range m.ToolCalls {
				size += len(tc.Args)
			}
		}
		if upto == 0 || size < min || ends[upto-1] < 0 {
			return
		}
		blocks := w.Messages[ends[upto-1]].Content
		blocks[len(blocks)-1].CacheControl = &anCache{Type: "ephemeral"}
	}
	memory := 0
	if req.Memory != nil && req.Memory.Messages <= len(req.Messages) {
		memory = req.Memory.Messages
		mark(memory)
	}
	if len(req.Tools) > 0 || req.Memory != nil || len(req.Messages) > 1 {
		size = 0 // mark counts from the start again
		for _, t := range req.Tools {
			size += len(t.Name) + len(t.Description) + len(t.Parameters)
		}
		size += len(req.System)
		mark(len(req.Messages))
	}
}

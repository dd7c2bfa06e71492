package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/planrunner/runner/internal/sys/mask"
	"net/http"
	"strings"
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
	Model       string      `json:"model"`
	MaxTokens   int         `json:"max_tokens"`
	System      string      `json:"system,omitempty"`
	Messages    []anMessage `json:"messages"`
	Tools       []anTool    `json:"tools,omitempty"`
	Temperature *float64    `json:"temperature,omitempty"`
}

type anMessage struct {
	Role    string    `json:"role"` // user or assistant
	Content []anBlock `json:"content"`
}

// anBlock is a content block: text, tool_use or tool_result.
type anBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type anTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anResponse struct {
	Type       string    `json:"type"`
	Model      string    `json:"model"`
	Content    []anBlock `json:"content"`
	StopReason string    `json:"stop_reason"`
	Usage      *struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

type anError struct {
	Type  string `json:"type"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func (p *anthropic) complete(ctx context.Context, c *callInfo, req *Request) (*Response, int, error) {
	body, err := json.Marshal(p.wire(req))
	if err != nil {
		return nil, 0, fmt.Errorf("anthropic: %w", err)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	h.Set("anthropic-version", anthropicVersion)
	h.Set("x-api-key", p.key)
	data, retries, err := p.t.post(ctx, &exchange{provider: "anthropic", log: c.log,
		url: p.baseURL + "/v1/messages", header: h, body: body, timeout: p.agent.Timeout, agent: p.agent.Name,
		mask: p.mask, apiError: anthropicError})
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
	if len(req.Schema) > 0 {
		// The Messages API has no response_format: say it in the system
		// prompt; the llm step validates the answer either way.
		w.System = strings.TrimSpace(w.System + "\n\nAnswer with only a JSON value (no prose, no code fence) that matches this JSON Schema:\n" + string(req.Schema))
	}
	for _, m := range req.Messages {
		role, blocks := "user", []anBlock(nil)
		switch m.Role {
		case RoleAssistant:
			role = "assistant"
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
			continue
		}
		w.Messages = append(w.Messages, anMessage{Role: role, Content: blocks})
	}
	for _, t := range req.Tools {
		w.Tools = append(w.Tools, anTool{Name: t.Name, Description: t.Description, InputSchema: t.Parameters})
	}
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
	out := &Response{Model: r.Model, FinishReason: normalizeFinish(r.StopReason)}
	var text []string
	for _, b := range r.Content {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Args: normalizeArgs(b.Input)})
		}
		// thinking and other blocks are not part of the answer.
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

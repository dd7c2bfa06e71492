package codingagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
)

// The most a session keeps of each text (a message, a tool's input or
// result): the step's result stays readable; the recording has it all.
const (
	maxText    = 4 << 10
	maxEntries = 500
)

// Session is what a CLI's event stream said.
type Session struct {
	SessionID string     `json:"session_id,omitempty"`
	Model     string     `json:"model,omitempty"`
	Messages  []string   `json:"messages"`   // the agent's texts, in order
	ToolCalls []ToolCall `json:"tool_calls"` // in order
	FinalText string     `json:"final_text"`
	// ExitReason is how the CLI said the session ended: success,
	// error_max_turns, error_during_execution, failed... ("" when it
	// said nothing: it was stopped or crashed).
	ExitReason string `json:"exit_reason"`
	IsError    bool   `json:"is_error,omitempty"`
	Turns      int    `json:"turns,omitempty"`
	// ReportedCostUSD is the CLI's own cost estimate (Claude Code's
	// total_cost_usd), kept beside the metered one.
	ReportedCostUSD float64 `json:"reported_cost_usd,omitempty"`
	// Errors are error events the CLI printed.
	Errors []string `json:"errors,omitempty"`
}

// ToolCall is one tool the agent used.
type ToolCall struct {
	ID      string          `json:"id,omitempty"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input,omitempty"`
	Result  string          `json:"result,omitempty"`
	IsError bool            `json:"is_error,omitempty"`
}

// Reader reads a CLI's JSON-lines event stream as it comes (an
// io.Writer for the process's stdout) and writes a line per event worth
// showing to Show.
type Reader struct {
	cli  string // claude or codex
	show io.Writer

	mu   sync.Mutex
	buf  []byte
	sess Session
	byID map[string]int
}

// NewReader reads the stream of cli ("claude" or "codex").
func NewReader(cli string, show io.Writer) *Reader {
	return &Reader{cli: cli, show: show, byID: map[string]int{}, sess: Session{Messages: []string{}, ToolCalls: []ToolCall{}}}
}

func (r *Reader) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	for {
		i := bytes.IndexByte(r.buf, '\n')
		if i < 0 {
			break
		}
		r.line(r.buf[:i])
		r.buf = r.buf[i+1:]
	}
	return len(p), nil
}

// Session is what the stream said so far (a last line without its
// newline included).
func (r *Reader) Session() Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(bytes.TrimSpace(r.buf)) > 0 {
		r.line(r.buf)
		r.buf = nil
	}
	return r.sess
}

func (r *Reader) line(b []byte) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return
	}
	if r.cli == "codex" {
		r.codex(b)
	} else {
		r.claude(b)
	}
}

func clip(s string) string {
	if len(s) <= maxText {
		return s
	}
	return s[:maxText] + fmt.Sprintf("\n[... %d bytes dropped ...]", len(s)-maxText)
}

func clipJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) <= maxText {
		return raw
	}
	b, _ := json.Marshal(clip(string(raw)))
	return b
}

func (r *Reader) message(text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	if len(r.sess.Messages) < maxEntries {
		r.sess.Messages = append(r.sess.Messages, clip(text))
	}
	r.sess.FinalText = text
	r.showf("%s", firstLine(text))
}

func (r *Reader) call(id, name string, input json.RawMessage) {
	if len(r.sess.ToolCalls) >= maxEntries {
		return
	}
	r.sess.ToolCalls = append(r.sess.ToolCalls, ToolCall{ID: id, Name: name, Input: clipJSON(input)})
	if id != "" {
		r.byID[id] = len(r.sess.ToolCalls) - 1
	}
	r.showf("› %s %s", name, firstLine(string(clipJSON(input))))
}

func (r *Reader) result(id, text string, isErr bool) {
	i, ok := r.byID[id]
	if !ok {
		return
	}
	r.sess.ToolCalls[i].Result, r.sess.ToolCalls[i].IsError = clip(text), isErr
}

func (r *Reader) showf(format string, args ...any) {
	if r.show != nil {
		fmt.Fprintf(r.show, format+"\n", args...)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// claude reads one line of `claude -p --output-format stream-json
// --verbose`: system (init), assistant and user messages, and the result.
func (r *Reader) claude(b []byte) {
	var ev struct {
		Type      string `json:"type"`
		Subtype   string `json:"subtype"`
		SessionID string `json:"session_id"`
		Model     string `json:"model"`
		Message   struct {
			Model   string `json:"model"`
			Content []struct {
				Type      string          `json:"type"`
				Text      string          `json:"text"`
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Input     json.RawMessage `json:"input"`
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
				IsError   bool            `json:"is_error"`
			} `json:"content"`
		} `json:"message"`
		Result       string  `json:"result"`
		IsError      bool    `json:"is_error"`
		NumTurns     int     `json:"num_turns"`
		TotalCostUSD float64 `json:"total_cost_usd"`
	}
	if json.Unmarshal(b, &ev) != nil {
		return
	}
	if ev.SessionID != "" {
		r.sess.SessionID = ev.SessionID
	}
	switch ev.Type {
	case "system":
		if ev.Subtype == "init" && ev.Model != "" {
			r.sess.Model = ev.Model
		}
	case "assistant":
		if ev.Message.Model != "" {
			r.sess.Model = ev.Message.Model
		}
		for _, c := range ev.Message.Content {
			switch c.Type {
			case "text":
				r.message(c.Text)
			case "tool_use":
				r.call(c.ID, c.Name, c.Input)
			}
		}
	case "user":
		for _, c := range ev.Message.Content {
			if c.Type == "tool_result" {
				r.result(c.ToolUseID, contentText(c.Content), c.IsError)
			}
		}
	case "result":
		r.sess.ExitReason, r.sess.IsError, r.sess.Turns = ev.Subtype, ev.IsError, ev.NumTurns
		r.sess.ReportedCostUSD = ev.TotalCostUSD
		if ev.Result != "" {
			r.sess.FinalText = ev.Result
		}
		if ev.IsError {
			r.sess.Errors = append(r.sess.Errors, clip(cmpOr(ev.Result, ev.Subtype)))
		}
	}
}

// contentText is a tool result's content: a string, or text blocks.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// codex reads one line of `codex exec --json`: thread and turn events
// and items (agent messages, commands, file changes, tool calls).
func (r *Reader) codex(b []byte) {
	var ev struct {
		Type     string `json:"type"`
		ThreadID string `json:"thread_id"`
		Message  string `json:"message"`
		Error    *struct {
			Message string `json:"message"`
		} `json:"error"`
		Item struct {
			ID               string          `json:"id"`
			Type             string          `json:"type"`
			Text             string          `json:"text"`
			Command          string          `json:"command"`
			AggregatedOutput string          `json:"aggregated_output"`
			ExitCode         *int            `json:"exit_code"`
			Status           string          `json:"status"`
			Changes          json.RawMessage `json:"changes"`
			Server           string          `json:"server"`
			Tool             string          `json:"tool"`
			Arguments        json.RawMessage `json:"arguments"`
			Query            string          `json:"query"`
		} `json:"item"`
	}
	if json.Unmarshal(b, &ev) != nil {
		return
	}
	it := ev.Item
	switch ev.Type {
	case "thread.started":
		r.sess.SessionID = ev.ThreadID
	case "turn.started":
		r.sess.Turns++
	case "turn.completed":
		r.sess.ExitReason = "success"
	case "turn.failed":
		r.sess.ExitReason, r.sess.IsError = "failed", true
		if ev.Error != nil {
			r.sess.Errors = append(r.sess.Errors, clip(ev.Error.Message))
		}
	case "error":
		r.sess.Errors = append(r.sess.Errors, clip(ev.Message))
	case "item.completed":
		switch it.Type {
		case "agent_message":
			r.message(it.Text)
		case "command_execution":
			in, _ := json.Marshal(map[string]string{"command": it.Command})
			r.call(it.ID, "command", in)
			r.result(it.ID, it.AggregatedOutput, it.Status == "failed" || (it.ExitCode != nil && *it.ExitCode != 0))
		case "file_change":
			r.call(it.ID, "file_change", it.Changes)
			r.result(it.ID, it.Status, it.Status == "failed")
		case "mcp_tool_call":
			r.call(it.ID, it.Server+"/"+it.Tool, it.Arguments)
			r.result(it.ID, it.Status, it.Status == "failed")
		case "web_search":
			in, _ := json.Marshal(map[string]string{"query": it.Query})
			r.call(it.ID, "web_search", in)
		}
	}
}

// Package agenttest is a scripted model API for tests of coding-agent
// CLIs: a local HTTP server that speaks the streaming wire formats the
// CLIs use (Anthropic Messages SSE, OpenAI Responses SSE) and answers the
// agent loop's requests from a script of turns. It may import only the
// standard library.
package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Call is a tool call a turn makes: the tool's name and its arguments.
type Call struct {
	Name  string
	Input map[string]any
}

// Turn is one answer of the agent loop: text, then tool calls (none ends
// the session), with the usage the answer reports.
type Turn struct {
	Text         string
	Calls        []Call
	InputTokens  int
	OutputTokens int
}

// Server is a scripted model API. The n-th request of the agent loop (one
// that offers tools) gets Turns[n-1], counted by the model answers the
// request already holds; a request past the script gets a closing text.
// Requests without tools (titles, summaries a CLI asks for on the side)
// get a short text.
type Server struct {
	*httptest.Server
	Turns []Turn
	Model string
	// Sessions, when set, gives the turns of a session by its prompt
	// (the text of the user's messages) in place of Turns: a plan
	// that runs the CLI again, with another prompt, gets another script.
	Sessions func(prompt string) []Turn

	mu       sync.Mutex
	requests []Request
}

// Request is what the server was asked.
type Request struct {
	Path  string
	Body  map[string]any
	Auth  string // the key the client sent (x-api-key or the bearer token)
	Turn  int    // the agent-loop turn it answered (0: a side request)
	Tools bool
}

// New starts a scripted server; Close it when done.
func New(turns []Turn) *Server {
	s := &Server{Turns: turns, Model: "claude-sonnet-4-5"}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Requests are the requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	auth := r.Header.Get("x-api-key")
	if a := r.Header.Get("Authorization"); auth == "" && strings.HasPrefix(a, "Bearer ") {
		auth = strings.TrimPrefix(a, "Bearer ")
	}
	tools, _ := body["tools"].([]any)
	req := Request{Path: r.URL.Path, Body: body, Auth: auth, Tools: len(tools) > 0}
	switch {
	case strings.HasSuffix(r.URL.Path, "/messages/count_tokens"):
		s.record(req)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"input_tokens": 10}`)
		return
	case strings.HasSuffix(r.URL.Path, "/messages"):
		t := Turn{Text: "ok", InputTokens: 5, OutputTokens: 1}
		if req.Tools {
			req.Turn = countRole(body["messages"], "assistant") + 1
			t = s.turn(req.Turn, body["messages"])
		}
		s.record(req)
		if stream, _ := body["stream"].(bool); !stream {
			writeAnthropicJSON(w, s.Model, t)
			return
		}
		writeAnthropicSSE(w, s.Model, t, req.Turn)
	case strings.HasSuffix(r.URL.Path, "/responses"):
		t := Turn{Text: "ok", InputTokens: 5, OutputTokens: 1}
		if req.Tools {
			req.Turn = countType(body["input"], "function_call_output", "custom_tool_call_output") + 1
			t = s.turn(req.Turn, body["input"])
		}
		s.record(req)
		writeResponsesSSE(w, s.Model, t, req.Turn)
	default:
		s.record(req)
		http.NotFound(w, r)
	}
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r)
	s.mu.Unlock()
}

func (s *Server) turn(n int, msgs any) Turn {
	turns := s.Turns
	if s.Sessions != nil {
		turns = s.Sessions(userText(msgs))
	}
	if n <= len(turns) {
		return turns[n-1]
	}
	return Turn{Text: "Done.", InputTokens: 10, OutputTokens: 2}
}

// userText is the text of the user messages of either API's messages
// (a string, or blocks of text or input_text; tool results are not
// text blocks).
func userText(msgs any) string {
	var b strings.Builder
	list, _ := msgs.([]any)
	for _, m := range list {
		mm, _ := m.(map[string]any)
		if mm["role"] != "user" {
			continue
		}
		if s, ok := mm["content"].(string); ok {
			b.WriteString(s)
			b.WriteString("\n")
			continue
		}
		blocks, _ := mm["content"].([]any)
		for _, bl := range blocks {
			if bm, _ := bl.(map[string]any); bm != nil {
				if t, ok := bm["text"].(string); ok {
					b.WriteString(t)
					b.WriteString("\n")
				}
			}
		}
	}
	return b.String()
}

// countRole counts the messages of a role (Anthropic's messages).
func countRole(msgs any, role string) int {
	list, _ := msgs.([]any)
	n := 0
	for _, m := range list {
		if mm, _ := m.(map[string]any); mm["role"] == role {
			n++
		}
	}
	return n
}

// countType counts the input items of some types (Responses' input):
// one tool output per tool round, as each scripted turn makes one call.
func countType(items any, types ...string) int {
	list, _ := items.([]any)
	n := 0
	for _, it := range list {
		m, _ := it.(map[string]any)
		for _, t := range types {
			if m["type"] == t {
				n++
			}
		}
	}
	return n
}

func sse(w io.Writer, event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
}

func writeAnthropicSSE(w http.ResponseWriter, model string, t Turn, n int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": t.InputTokens, "output_tokens": 1}}})
	i := 0
	if t.Text != "" {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": t.Text}})
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	for j, c := range t.Calls {
		in, _ := json.Marshal(c.Input)
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{
			"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", n, j), "name": c.Name, "input": map[string]any{}}})
		// The input comes in two pieces, as a real stream splits it.
		half := len(in) / 2
		for _, part := range []string{string(in[:half]), string(in[half:])} {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	stop := "end_turn"
	if len(t.Calls) > 0 {
		stop = "tool_use"
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": t.OutputTokens}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

func writeAnthropicJSON(w http.ResponseWriter, model string, t Turn) {
	w.Header().Set("Content-Type", "application/json")
	content := []any{map[string]any{"type": "text", "text": t.Text}}
	json.NewEncoder(w).Encode(map[string]any{"id": "msg_side", "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": t.InputTokens, "output_tokens": t.OutputTokens}})
}

func writeResponsesSSE(w http.ResponseWriter, model string, t Turn, n int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	id := fmt.Sprintf("resp_%d", n)
	base := map[string]any{"id": id, "object": "response", "model": model, "status": "in_progress", "output": []any{}}
	sse(w, "response.created", map[string]any{"type": "response.created", "response": base})
	var output []any
	idx := 0
	if t.Text != "" {
		item := map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", n), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}}}}
		sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": idx,
			"item": map[string]any{"type": "message", "id": item["id"], "role": "assistant", "status": "in_progress", "content": []any{}}})
		sse(w, "response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": item["id"], "output_index": idx, "content_index": 0, "delta": t.Text})
		sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": idx, "item": item})
		output = append(output, item)
		idx++
	}
	for j, c := range t.Calls {
		args, _ := json.Marshal(c.Input)
		item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d_%d", n, j), "call_id": fmt.Sprintf("call_%d_%d", n, j),
			"name": c.Name, "arguments": string(args), "status": "completed"}
		sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": idx, "item": item})
		sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": idx, "item": item})
		output = append(output, item)
		idx++
	}
	done := map[string]any{"id": id, "object": "response", "model": model, "status": "completed", "output": output,
		"usage": map[string]any{"input_tokens": t.InputTokens, "output_tokens": t.OutputTokens, "total_tokens": t.InputTokens + t.OutputTokens,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}}
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": done})
}

// Package fakebatch serves, in memory and for tests, the batch APIs of
// OpenAI (platform.openai.com/docs/api-reference/batch and /files) and
// Anthropic (docs.anthropic.com/en/api/creating-message-batches, and the
// retrieve, list, cancel and results pages beside it), with the objects,
// states and result files their documentation describes, and the
// ordinary calls (chat completions, messages) an item the batch failed
// is asked again with. It imports only the standard library.
package fakebatch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"time"
)

// Server is a fake provider. Its fields are set before the first request.
type Server struct {
	*httptest.Server

	// End is how a batch ends: completed (the default), failed (the
	// whole batch refused, no results), expired (the items in Expire
	// unanswered) or cancelled.
	End string
	// Fail lists custom_id suffixes ("-3": item 3) whose request the
	// batch answers with an error (in OpenAI's error file; Anthropic's
	// errored result).
	Fail []string
	// Expire lists custom_id suffixes the batch leaves unanswered when it
	// expires.
	Expire []string
	// Polls is how many polls see the batch in progress (default 2).
	Polls int
	// FailCreates is how many batch creates make their batch and then
	// fail: answered 500 or, with DropCreate, their connection closed
	// unanswered.
	FailCreates int
	DropCreate  bool

	mu         sync.Mutex
	hold       bool
	holdCreate chan struct{} // non-nil: creates wait for it to close
	files      map[string][]byte
	batches    map[string]*batch
	order      []string
	// Submitted counts batches created; Ordinary counts ordinary calls;
	// Cancels counts cancel requests.
	submitted, ordinary, cancels int
	n                            int
}

type batch struct {
	id, status string
	created    time.Time
	meta       map[string]string
	reqs       []request
	polls      int
	out, errs  string // OpenAI's file ids
}

type request struct {
	ID   string
	Body json.RawMessage
}

// OpenAI starts a fake OpenAI API (its base URL is URL+"/v1").
func OpenAI() *Server { return start(true) }

// Anthropic starts a fake Anthropic API (its base URL is URL).
func Anthropic() *Server { return start(false) }

func start(openai bool) *Server {
	s := &Server{files: map[string][]byte{}, batches: map[string]*batch{}}
	if openai {
		s.Server = httptest.NewServer(http.HandlerFunc(s.openAI))
	} else {
		s.Server = httptest.NewServer(http.HandlerFunc(s.anthropic))
	}
	return s
}

// Hold keeps every batch in progress, however often it is polled, until
// Release.
func (s *Server) Hold() { s.mu.Lock(); s.hold = true; s.mu.Unlock() }

// Release lets held batches end.
func (s *Server) Release() { s.mu.Lock(); s.hold = false; s.mu.Unlock() }

// HoldCreates keeps every batch create's answer, the batch made, until
// ReleaseCreates or until the client goes away.
func (s *Server) HoldCreates() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holdCreate == nil {
		s.holdCreate = make(chan struct{})
	}
}

// ReleaseCreates answers the held creates, and later ones at once.
func (s *Server) ReleaseCreates() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holdCreate != nil {
		close(s.holdCreate)
		s.holdCreate = nil
	}
}

// created answers a create whose batch is made (s.mu held): held, failed
// or dropped as the fields say, else obj.
func (s *Server) created(w http.ResponseWriter, r *http.Request, obj map[string]any) {
	if ch := s.holdCreate; ch != nil {
		s.mu.Unlock()
		select {
		case <-ch:
		case <-r.Context().Done():
		}
		s.mu.Lock()
		if r.Context().Err() != nil {
			return
		}
	}
	if s.FailCreates > 0 {
		s.FailCreates--
		if s.DropCreate {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		writeJSON(w, 500, map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": "internal error"}})
		return
	}
	writeJSON(w, 200, obj)
}

// Submitted is the number of batches created.
func (s *Server) Submitted() int { s.mu.Lock(); defer s.mu.Unlock(); return s.submitted }

// Ordinary is the number of ordinary (not batched) calls answered.
func (s *Server) Ordinary() int { s.mu.Lock(); defer s.mu.Unlock(); return s.ordinary }

// Cancels is the number of cancel requests.
func (s *Server) Cancels() int { s.mu.Lock(); defer s.mu.Unlock(); return s.cancels }

// Items is the number of requests in the batches created.
func (s *Server) Items() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, b := range s.batches {
		n += len(b.reqs)
	}
	return n
}

func (s *Server) id(prefix string) string {
	s.n++
	return fmt.Sprintf("%s%04d", prefix, s.n)
}

func has(list []string, id string) bool {
	for _, suf := range list {
		if strings.HasSuffix(id, suf) {
			return true
		}
	}
	return false
}

// prompt is the last user text of a request body (either provider's).
func prompt(body json.RawMessage) string {
	var r struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &r)
	text := ""
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		var str string
		if json.Unmarshal(m.Content, &str) == nil {
			text = str
			continue
		}
		var parts []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(m.Content, &parts)
		for _, p := range parts {
			text = p.Text
		}
	}
	return text
}

// Answer is the fake's answer text to a prompt, batched or not.
func Answer(prompt string) string { return "answer: " + prompt }

func chatCompletion(body json.RawMessage) []byte {
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-2024-08-06",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": Answer(prompt(body))}}},
		"usage": map[string]any{"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}})
	return b
}

func message(body json.RawMessage) []byte {
	b, _ := json.Marshal(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514",
		"content": []any{map[string]any{"type": "text", "text": Answer(prompt(body))}}, "stop_reason": "end_turn",
		"usage": map[string]any{"input_tokens": 1000, "output_tokens": 100}})
	return b
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// advance moves a polled batch on: in progress for Polls polls (or while
// held), then its end.
func (s *Server) advance(b *batch, inProgress, finalizing string, cancelled string) {
	polls := s.Polls
	if polls == 0 {
		polls = 2
	}
	switch {
	case b.status == cancelled || strings.HasPrefix(b.status, "cancel"):
		b.status = cancelled
		return
	case s.hold:
		b.status = inProgress
		return
	}
	b.polls++
	if b.polls <= polls {
		b.status = inProgress
		return
	}
	if finalizing != "" && b.status != finalizing {
		b.status = finalizing
		return
	}
	b.status = "end"
}

// ---- OpenAI ----

func (s *Server) openAI(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") == "" {
		writeJSON(w, 401, map[string]any{"error": map[string]any{"message": "no key", "type": "invalid_request_error"}})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case r.Method == "POST" && path == "/chat/completions":
		body, _ := io.ReadAll(r.Body)
		s.ordinary++
		w.Header().Set("Content-Type", "application/json")
		w.Write(chatCompletion(body))
	case r.Method == "POST" && path == "/files":
		if err := r.ParseMultipartForm(64 << 20); err != nil || r.FormValue("purpose") != "batch" {
			writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "want purpose batch and a file", "type": "invalid_request_error"}})
			return
		}
		f, _, err := r.FormFile("file")
		if err != nil {
			writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "no file"}})
			return
		}
		data, _ := io.ReadAll(f)
		id := s.id("file-")
		s.files[id] = data
		writeJSON(w, 200, map[string]any{"id": id, "object": "file", "bytes": len(data), "purpose": "batch", "filename": "batch.jsonl"})
	case r.Method == "POST" && path == "/batches":
		var in struct {
			InputFileID      string            `json:"input_file_id"`
			Endpoint         string            `json:"endpoint"`
			CompletionWindow string            `json:"completion_window"`
			Metadata         map[string]string `json:"metadata"`
		}
		if json.NewDecoder(r.Body).Decode(&in) != nil || s.files[in.InputFileID] == nil || in.CompletionWindow != "24h" ||
			(in.Endpoint != "/v1/chat/completions" && in.Endpoint != "/v1/responses") {
			writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "bad batch", "type": "invalid_request_error"}})
			return
		}
		b := &batch{id: s.id("batch_"), status: "validating", created: time.Now(), meta: in.Metadata}
		sc := bufio.NewScanner(bytes.NewReader(s.files[in.InputFileID]))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var l struct {
				CustomID string          `json:"custom_id"`
				Method   string          `json:"method"`
				URL      string          `json:"url"`
				Body     json.RawMessage `json:"body"`
			}
			if json.Unmarshal(sc.Bytes(), &l) != nil || l.Method != "POST" || l.URL != in.Endpoint {
				writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "bad line"}})
				return
			}
			b.reqs = append(b.reqs, request{l.CustomID, l.Body})
		}
		s.batches[b.id] = b
		s.order = append(s.order, b.id)
		s.submitted++
		s.created(w, r, s.oaObject(b))
	case r.Method == "GET" && path == "/batches":
		var data []any
		for i := len(s.order) - 1; i >= 0; i-- { // newest first
			data = append(data, s.oaObject(s.batches[s.order[i]]))
		}
		last := ""
		if len(s.order) > 0 {
			last = s.order[0]
		}
		writeJSON(w, 200, map[string]any{"object": "list", "data": data, "has_more": false, "last_id": last})
	case r.Method == "GET" && strings.HasPrefix(path, "/batches/"):
		b := s.batches[strings.TrimPrefix(path, "/batches/")]
		if b == nil {
			writeJSON(w, 404, map[string]any{"error": map[string]any{"message": "no such batch"}})
			return
		}
		s.advance(b, "in_progress", "finalizing", "cancelled")
		if b.status == "end" || b.status == "cancelled" {
			s.oaEnd(b)
		}
		writeJSON(w, 200, s.oaObject(b))
	case r.Method == "POST" && strings.HasPrefix(path, "/batches/") && strings.HasSuffix(path, "/cancel"):
		b := s.batches[strings.TrimSuffix(strings.TrimPrefix(path, "/batches/"), "/cancel")]
		if b == nil {
			writeJSON(w, 404, map[string]any{"error": map[string]any{"message": "no such batch"}})
			return
		}
		s.cancels++
		b.status = "cancelling"
		writeJSON(w, 200, s.oaObject(b))
	case r.Method == "GET" && strings.HasPrefix(path, "/files/") && strings.HasSuffix(path, "/content"):
		data, ok := s.files[strings.TrimSuffix(strings.TrimPrefix(path, "/files/"), "/content")]
		if !ok {
			writeJSON(w, 404, map[string]any{"error": map[string]any{"message": "no such file"}})
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(data)
	default:
		writeJSON(w, 404, map[string]any{"error": map[string]any{"message": "not found: " + r.Method + " " + r.URL.Path}})
	}
}

// oaEnd writes an ending batch's output and error files.
func (s *Server) oaEnd(b *batch) {
	if b.status == "end" {
		b.status = s.End
		if b.status == "" {
			b.status = "completed"
		}
	}
	if b.out != "" || b.errs != "" || b.status == "failed" {
		return
	}
	var out, errs bytes.Buffer
	for i, q := range b.reqs {
		line := map[string]any{"id": fmt.Sprintf("batch_req_%d", i), "custom_id": q.ID}
		switch {
		case has(s.Fail, q.ID):
			line["response"] = map[string]any{"status_code": 400, "request_id": "req_x",
				"body": map[string]any{"error": map[string]any{"message": "invalid request", "type": "invalid_request_error"}}}
			line["error"] = nil
			json.NewEncoder(&errs).Encode(line)
		case b.status == "cancelled" || (b.status == "expired" && has(s.Expire, q.ID)):
			code := "batch_cancelled"
			if b.status == "expired" {
				code = "batch_expired"
			}
			line["response"] = nil
			line["error"] = map[string]any{"code": code, "message": "This request could not be executed before the batch ended."}
			json.NewEncoder(&errs).Encode(line)
		default:
			line["response"] = map[string]any{"status_code": 200, "request_id": "req_x", "body": json.RawMessage(chatCompletion(q.Body))}
			line["error"] = nil
			json.NewEncoder(&out).Encode(line)
		}
	}
	if out.Len() > 0 {
		b.out = s.id("file-")
		s.files[b.out] = out.Bytes()
	}
	if errs.Len() > 0 {
		b.errs = s.id("file-")
		s.files[b.errs] = errs.Bytes()
	}
}

func (s *Server) oaObject(b *batch) map[string]any {
	o := map[string]any{"id": b.id, "object": "batch", "endpoint": "/v1/chat/completions", "status": b.status,
		"completion_window": "24h", "created_at": b.created.Unix(), "metadata": b.meta,
		"request_counts": map[string]int{"total": len(b.reqs)}}
	if b.out != "" {
		o["output_file_id"] = b.out
	}
	if b.errs != "" {
		o["error_file_id"] = b.errs
	}
	if b.status == "failed" {
		o["errors"] = map[string]any{"object": "list", "data": []any{map[string]any{"code": "invalid_json_line", "message": "refused"}}}
	}
	return o
}

// ---- Anthropic ----

func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("x-api-key") == "" || r.Header.Get("anthropic-version") == "" {
		writeJSON(w, 401, map[string]any{"type": "error", "error": map[string]any{"type": "authentication_error", "message": "no key"}})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	const root = "/v1/messages/batches"
	path := r.URL.Path
	switch {
	case r.Method == "POST" && path == "/v1/messages":
		body, _ := io.ReadAll(r.Body)
		s.ordinary++
		w.Header().Set("Content-Type", "application/json")
		w.Write(message(body))
	case r.Method == "POST" && path == root:
		var in struct {
			Requests []struct {
				CustomID string          `json:"custom_id"`
				Params   json.RawMessage `json:"params"`
			} `json:"requests"`
		}
		if json.NewDecoder(r.Body).Decode(&in) != nil || len(in.Requests) == 0 {
			writeJSON(w, 400, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": "bad batch"}})
			return
		}
		b := &batch{id: s.id("msgbatch_"), status: "in_progress", created: time.Now()}
		for _, q := range in.Requests {
			b.reqs = append(b.reqs, request{q.CustomID, q.Params})
		}
		s.batches[b.id] = b
		s.order = append(s.order, b.id)
		s.submitted++
		s.created(w, r, s.anObject(b))
	case r.Method == "GET" && path == root:
		var data []any
		for i := len(s.order) - 1; i >= 0; i-- {
			data = append(data, s.anObject(s.batches[s.order[i]]))
		}
		first, last := "", ""
		if len(s.order) > 0 {
			first, last = s.order[len(s.order)-1], s.order[0]
		}
		writeJSON(w, 200, map[string]any{"data": data, "has_more": false, "first_id": first, "last_id": last})
	case r.Method == "GET" && strings.HasSuffix(path, "/results"):
		b := s.batches[strings.TrimSuffix(strings.TrimPrefix(path, root+"/"), "/results")]
		if b == nil || b.status != "ended" {
			writeJSON(w, 404, map[string]any{"type": "error", "error": map[string]any{"type": "not_found_error", "message": "no results"}})
			return
		}
		w.Header().Set("Content-Type", "application/binary")
		for _, q := range b.reqs {
			line := map[string]any{"custom_id": q.ID}
			switch {
			case has(s.Fail, q.ID):
				line["result"] = map[string]any{"type": "errored", "error": map[string]any{"type": "error",
					"error": map[string]any{"type": "invalid_request_error", "message": "invalid request"}}}
			case b.meta["end"] == "canceled":
				line["result"] = map[string]any{"type": "canceled"}
			case b.meta["end"] == "expired" && has(s.Expire, q.ID):
				line["result"] = map[string]any{"type": "expired"}
			default:
				line["result"] = map[string]any{"type": "succeeded", "message": json.RawMessage(message(q.Body))}
			}
			json.NewEncoder(w).Encode(line)
		}
	case r.Method == "GET" && strings.HasPrefix(path, root+"/"):
		b := s.batches[strings.TrimPrefix(path, root+"/")]
		if b == nil {
			writeJSON(w, 404, map[string]any{"type": "error", "error": map[string]any{"type": "not_found_error", "message": "no such batch"}})
			return
		}
		if b.status != "ended" {
			s.advance(b, "in_progress", "", "canceling")
			switch b.status {
			case "canceling":
				b.status, b.meta = "ended", map[string]string{"end": "canceled"}
			case "end":
				b.status, b.meta = "ended", map[string]string{"end": s.End}
			}
		}
		writeJSON(w, 200, s.anObject(b))
	case r.Method == "POST" && strings.HasSuffix(path, "/cancel"):
		b := s.batches[strings.TrimSuffix(strings.TrimPrefix(path, root+"/"), "/cancel")]
		if b == nil {
			writeJSON(w, 404, map[string]any{"type": "error", "error": map[string]any{"type": "not_found_error", "message": "no such batch"}})
			return
		}
		s.cancels++
		if b.status != "ended" {
			b.status = "canceling"
		}
		writeJSON(w, 200, s.anObject(b))
	default:
		writeJSON(w, 404, map[string]any{"type": "error", "error": map[string]any{"type": "not_found_error", "message": "not found: " + path}})
	}
}

func (s *Server) anObject(b *batch) map[string]any {
	counts := map[string]int{"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
	if b.status == "ended" {
		for _, q := range b.reqs {
			switch {
			case has(s.Fail, q.ID):
				counts["errored"]++
			case b.meta["end"] == "canceled":
				counts["canceled"]++
			case b.meta["end"] == "expired" && has(s.Expire, q.ID):
				counts["expired"]++
			default:
				counts["succeeded"]++
			}
		}
	} else {
		counts["processing"] = len(b.reqs)
	}
	o := map[string]any{"id": b.id, "type": "message_batch", "processing_status": b.status, "request_counts": counts,
		"created_at": b.created.UTC().Format(time.RFC3339Nano), "expires_at": b.created.Add(24 * time.Hour).UTC().Format(time.RFC3339Nano),
		"ended_at": nil, "results_url": nil}
	if b.status == "ended" {
		o["results_url"] = s.URL + "/v1/messages/batches/" + b.id + "/results"
		o["ended_at"] = time.Now().UTC().Format(time.RFC3339Nano)
	}
	return o
}

// IDs lists the batches created, oldest first.
func (s *Server) IDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := append([]string(nil), s.order...)
	sort.Strings(ids)
	return ids
}

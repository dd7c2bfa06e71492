package agents

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/plans"
)

// The fixtures in testdata/anthropic follow the event sequences of
// Anthropic's API reference, "Streaming Messages"
// (https://platform.claude.com/docs/en/build-with-claude/streaming):
// text.sse its basic streaming request, tool_use.sse its streaming
// request with tool use (input_json_delta), thinking.sse its streaming
// request with extended thinking (thinking_delta, signature_delta), and
// error.sse its error event (overloaded_error) arriving mid-stream.
func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "anthropic", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadAnthropicStream(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sse     string
		want    *Response
		deltas  []string
		status  int
		wantErr string
	}{
		{name: "text", sse: fixture(t, "text.sse"), deltas: []string{"Hello", "!"},
			want: &Response{Text: "Hello!", FinishReason: "stop", Model: "claude-sonnet-4-5-20250929",
				Usage: Usage{InputTokens: 25 + 2048, OutputTokens: 15, CacheReadInputTokens: 2048}}},
		{name: "CRLF line ends", sse: strings.ReplaceAll(fixture(t, "text.sse"), "\n", "\r\n"), deltas: []string{"Hello", "!"},
			want: &Response{Text: "Hello!", FinishReason: "stop", Model: "claude-sonnet-4-5-20250929",
				Usage: Usage{InputTokens: 25 + 2048, OutputTokens: 15, CacheReadInputTokens: 2048}}},
		{name: "tool use", sse: fixture(t, "tool_use.sse"), deltas: []string{"Okay, let me check the board."},
			want: &Response{Text: "Okay, let me check the board.", FinishReason: "tool_calls", Model: "claude-sonnet-4-5-20250929",
				ToolCalls: []ToolCall{{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "board_read", Args: json.RawMessage(`{"key":"notes/plan"}`)}},
				Usage:     Usage{InputTokens: 472, OutputTokens: 89}}},
		{name: "thinking, cut at max_tokens", sse: fixture(t, "thinking.sse"), deltas: []string{"The greatest common divisor of 1071 and 462 is **21**."},
			want: &Response{Text: "The greatest common divisor of 1071 and 462 is **21**.", FinishReason: "length", Model: "claude-sonnet-4-5-20250929",
				Thinking: []Thinking{{Text: "I need to find the GCD of 1071 and 462 using the Euclidean algorithm.\n\n1071 = 2 × 462 + 147",
					Signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds..."}},
				Usage: Usage{InputTokens: 60, OutputTokens: 4096}}},
		{name: "error event mid-stream", sse: fixture(t, "error.sse"), deltas: []string{"Hel"}, status: 529},
		{name: "ends before message_stop", sse: strings.Split(fixture(t, "text.sse"), "event: message_delta")[0], deltas: []string{"Hello", "!"},
			wantErr: "the stream ended before message_stop"},
		{name: "cut inside an event", sse: fixture(t, "text.sse")[:300], wantErr: "the stream ended before message_stop"},
		{name: "a delta before message_start", sse: "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
			wantErr: "the stream sent content_block_delta before message_start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var deltas []string
			body, status, err := readAnthropicStream(strings.NewReader(tc.sse), func(s string) { deltas = append(deltas, s) })
			if !reflect.DeepEqual(deltas, tc.deltas) {
				t.Errorf("deltas = %q, want %q", deltas, tc.deltas)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.status != 0 {
				if status != tc.status || anthropicError(status, body).Type != "overloaded_error" {
					t.Errorf("status %d, body %s", status, body)
				}
				return
			}
			got, err := parseAnthropic(body)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("answer =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// sseServer answers each call with the next of bodies as an event stream;
// a body ending in "\x00stall" is sent and then the stream stays open and
// silent. It checks the request as the Messages API does.
func sseServer(t *testing.T, bodies ...string) (*httptest.Server, func() []captured) {
	var mu sync.Mutex
	var reqs []captured
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(raw, &body)
		mu.Lock()
		reqs = append(reqs, captured{header: r.Header.Clone(), raw: raw, body: body})
		n := len(reqs)
		mu.Unlock()
		if status, msg := anthropicValidate(r, body); status != 0 {
			w.WriteHeader(status)
			io.WriteString(w, msg)
			return
		}
		if body["stream"] != true || r.Header.Get("Accept") != "text/event-stream" {
			w.WriteHeader(400)
			io.WriteString(w, anErr("invalid_request_error", "this fake streams only"))
			return
		}
		if n > len(bodies) {
			w.WriteHeader(500)
			io.WriteString(w, anErr("api_error", "fake: no answer left"))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		b, stall := strings.CutSuffix(bodies[n-1], "\x00stall")
		io.WriteString(w, b)
		w.(http.Flusher).Flush()
		if stall {
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []captured { mu.Lock(); defer mu.Unlock(); return append([]captured(nil), reqs...) }
}

func streamingAgent(base string) *plans.Agent {
	a := anthropicAgent(base)
	a.Model, a.Stream = "claude-sonnet-4-5-20250929", true
	return a
}

// A streamed call is recorded whole, as a non-streamed one would be: an
// error event or a stream that ends early is retried like a failed call
// and leaves nothing of itself on the board; a silent stream ends at the
// agent's timeout.
func TestAnthropicStreamedCall(t *testing.T) {
	text := fixture(t, "text.sse")
	broken := strings.Split(text, "event: message_delta")[0]
	for _, tc := range []struct {
		name     string
		bodies   []string
		timeout  time.Duration
		wantText string
		wantErr  string
		retries  int
		chunks   string
	}{
		{name: "answer", bodies: []string{text}, wantText: "Hello!", chunks: "Hello!"},
		{name: "overloaded mid-stream, then the answer", bodies: []string{fixture(t, "error.sse"), text},
			wantText: "Hello!", retries: 1, chunks: "HelHello!"},
		{name: "stream breaks, then the answer", bodies: []string{broken, text}, wantText: "Hello!", retries: 1, chunks: "Hello!Hello!"},
		{name: "breaks every time", bodies: []string{broken, broken, broken, broken},
			wantErr: "the stream ended before message_stop (after 3 retries)", retries: 3, chunks: strings.Repeat("Hello!", 4)},
		{name: "stalls", bodies: []string{broken + "\x00stall"}, timeout: 300 * time.Millisecond,
			wantErr: "nothing more of the answer's stream (status 200, stalled after", chunks: "Hello!"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := sseServer(t, tc.bodies...)
			spec := streamingAgent(srv.URL)
			if tc.timeout > 0 {
				spec.Timeout = tc.timeout
			}
			var mu sync.Mutex
			var chunks strings.Builder
			h := newHarness(t, onePlan(spec), func(o *Options) {
				o.OnStream = func(c StreamChunk) {
					mu.Lock()
					defer mu.Unlock()
					if c.Agent != "critic" || c.Label != "review" || c.Visit != 1 || c.Call != 1 {
						t.Errorf("chunk of %+v", c)
					}
					chunks.WriteString(c.Text)
				}
			})
			ss := h.session(t, "review", "critic")
			resp, err := ss.Send(context.Background(), user("Review this"))
			checkCall(t, h, ss, err, tc.retries, nil)
			if chunks.String() != tc.chunks {
				t.Errorf("shown as it came: %q, want %q", chunks.String(), tc.chunks)
			}
			recs := h.board.Recordings()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if len(recs) != 0 {
					t.Errorf("a failed stream was recorded: %s", recs[0].Response)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tc.wantText || len(recs) != 1 {
				t.Fatalf("text %q, %d recordings", resp.Text, len(recs))
			}
			// Replayed from the recording: no server, no stream.
			srv.Close()
			rh := newHarness(t, onePlan(spec), func(o *Options) { o.Replay = FromRecordings(recs) })
			again, err := rh.session(t, "review", "critic").Send(context.Background(), user("Review this"))
			if err != nil || again.Text != resp.Text || again.Usage != resp.Usage {
				t.Errorf("replay: %+v, %v", again, err)
			}
		})
	}
}

package agents

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/plans"
)

// TestSilentProviderEndsWithinTheTimeout: a provider that accepts the
// request and never sends headers, and one that sends headers and part
// of the body and then stalls, each end the call within the agent's
// timeout, with an error naming the server, what it left unanswered and
// the setting; no goroutine of the call is left.
func TestSilentProviderEndsWithinTheTimeout(t *testing.T) {
	const limit = 300 * time.Millisecond
	tests := []struct {
		name    string
		agent   func(base string) *plans.Agent
		partial bool // headers and part of the body, then silence
		want    string
	}{
		{"openai, no headers", openAIAgent, false,
			`openai (URL/v1/chat/completions): no complete answer (no response headers) within 300ms (the agent's timeout: agents.coder.timeout)`},
		{"openai, stalls mid-body", openAIAgent, true,
			`openai (URL/v1/chat/completions): no complete answer's body (status 200, stalled after 13 bytes) within 300ms (the agent's timeout: agents.coder.timeout)`},
		{"anthropic, no headers", anthropicAgent, false,
			`anthropic (URL/v1/messages): no complete answer (no response headers) within 300ms (the agent's timeout: agents.critic.timeout)`},
		{"anthropic, stalls mid-body", anthropicAgent, true,
			`anthropic (URL/v1/messages): no complete answer's body (status 200, stalled after 13 bytes) within 300ms (the agent's timeout: agents.critic.timeout)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if tt.partial {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(200)
					io.WriteString(w, `{"choices": [`) // 13 bytes
					w.(http.Flusher).Flush()
				}
				<-r.Context().Done()
			}))
			a := tt.agent(srv.URL)
			a.Timeout = limit
			h := newHarness(t, onePlan(a), nil)
			ss := h.session(t, "ask", a.Name)
			began := time.Now()
			_, err := ss.Send(context.Background(), user("Say hello"))
			took := time.Since(began)
			want := strings.ReplaceAll(tt.want, "URL", srv.URL)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v\nwant it to contain %s", err, want)
			}
			// Generous: the point is that it ends, not how fast.
			if took > limit+15*time.Second {
				t.Errorf("took %s with a timeout of %s", took, limit)
			}
			srv.Close()
			for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					buf := make([]byte, 1<<20)
					t.Fatalf("%d goroutines left (%d before):\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
				}
			}
		})
	}
}

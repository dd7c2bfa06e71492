package agents

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/plans"
)

// Which failures a fallback agent takes over, and how a saved run with one
// replays.
func TestFallback(t *testing.T) {
	overloaded := answer{status: 529, body: anErr("overloaded_error", "Overloaded")}
	tests := []struct {
		name      string
		primary   []answer // the Anthropic agent's answers (it retries 3 times)
		second    []answer // the first fallback's (OpenAI)
		wantAgent string   // who answered; "" : the call fails
		wantErr   string
		wantFails string // agents in failed_over
	}{
		{name: "overloaded every time", primary: []answer{overloaded, overloaded, overloaded, overloaded},
			second: []answer{{body: oaAnswer("from second", true)}}, wantAgent: "second", wantFails: "primary"},
		{name: "a retry cures it: no fallback", primary: []answer{overloaded, {body: anAnswer("from primary")}},
			wantAgent: "primary"},
		{name: "model not found", primary: []answer{{status: 404, body: anErr("not_found_error", "model: claude-nope")}},
			second: []answer{{body: oaAnswer("from second", true)}}, wantAgent: "second", wantFails: "primary"},
		{name: "a refused request is not the provider's fault", primary: []answer{{status: 400, body: anErr("invalid_request_error", "bad")}},
			wantErr: "agent primary: anthropic: 400 invalid_request_error: bad"},
		{name: "timeout", primary: []answer{{delay: time.Second, body: anAnswer("late")}},
			second: []answer{{body: oaAnswer("from second", true)}}, wantAgent: "second", wantFails: "primary"},
		{name: "every fallback fails: the next one is tried, then all are reported",
			primary:   []answer{overloaded, overloaded, overloaded, overloaded},
			second:    []answer{{status: 500, body: oaErr("boom", "server_error", "")}, {status: 500, body: oaErr("boom", "server_error", "")}, {status: 500, body: oaErr("boom", "server_error", "")}, {status: 500, body: oaErr("boom", "server_error", "")}},
			wantAgent: "third", wantFails: "primary second"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fp := newFake(t, anthropicValidate, tt.primary...)
			fs := newFake(t, openAIValidate, tt.second...)
			primary := &plans.Agent{Name: "primary", Provider: "anthropic", Model: "claude-sonnet-4-5", BaseURL: fp.srv.URL,
				System: "Primary's system.", Timeout: 200 * time.Millisecond, Fallback: []string{"second", "third"}}
			second := openAIAgent(fs.srv.URL)
			second.Name = "second"
			third := scriptAgent(plans.Response{Text: "from third"})
			third.Name = "third"
			if tt.name != "every fallback fails: the next one is tried, then all are reported" {
				third.Responses = nil
			}
			plan := onePlan(primary, second, third)
			h := newHarness(t, plan, nil)
			ss := h.session(t, "ask", "primary")
			resp, err := ss.Send(context.Background(), user("q"))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
				if len(fs.requests()) != 0 {
					t.Error("the fallback was called")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			recs := h.board.Recordings()
			if len(recs) != 1 || recs[0].Agent != tt.wantAgent || ss.Agent().Name != tt.wantAgent || ss.Stats().Agent != tt.wantAgent {
				t.Fatalf("answered by %v (session %s), want %s", recs, ss.Agent().Name, tt.wantAgent)
			}
			var fails []string
			for _, f := range resp.FailedOver {
				fails = append(fails, f.Agent)
			}
			if strings.Join(fails, " ") != tt.wantFails {
				t.Errorf("failed_over = %+v, want %s", resp.FailedOver, tt.wantFails)
			}
			if tt.wantAgent == "second" {
				// The fallback brings its own system prompt.
				if got := fs.requests()[0].body["messages"].([]any)[0].(map[string]any)["content"]; got != "Be brief." {
					t.Errorf("the fallback's system prompt = %v", got)
				}
			}
			// The answer's entry says it was a fallback.
			last := h.board.Entries()[len(h.board.Entries())-1]
			if tt.wantFails != "" && (last.Author != tt.wantAgent || last.Meta["fallback_for"] != "primary") {
				t.Errorf("answer entry = %+v", last)
			}

			// Replay: the same answer, from the recording, with no call, the
			// same retries and the same board.
			rh := newHarness(t, plan, func(o *Options) { o.Replay = FromRecordings(recs) })
			rs := rh.session(t, "ask", "primary")
			before := len(fp.requests()) + len(fs.requests())
			again, err := rs.Send(context.Background(), user("q"))
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			if again.Text != resp.Text || rs.Stats().Retries != ss.Stats().Retries || rs.Agent().Name != tt.wantAgent {
				t.Errorf("replay answered %q by %s with %d retries; the run %q by %s with %d", again.Text, rs.Agent().Name,
					rs.Stats().Retries, resp.Text, tt.wantAgent, ss.Stats().Retries)
			}
			if n := len(fp.requests()) + len(fs.requests()); n != before {
				t.Errorf("the replay made %d calls", n-before)
			}
			if a, b := jsonStr(h.board.Recordings()), jsonStr(rh.board.Recordings()); a != b {
				t.Errorf("replayed recordings differ:\n%s\n%s", a, b)
			}
		})
	}
}

package agents

import (
	"context"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// A retry given the calls a lost attempt checkpointed (Set.Resume) takes
// each answer from them, once and only for the same request, recorded as
// the model gave it (not marked reused); the rest go to the model.
func TestResumeAnswersCheckpointedCalls(t *testing.T) {
	// The lost attempt: two calls, both answered.
	f := newFake(t, openAIValidate, answer{body: oaAnswer("one", true)}, answer{body: oaAnswer("two", true)})
	h := newHarness(t, onePlan(openAIAgent(f.srv.URL)), nil)
	ss := h.session(t, "plan", "coder")
	for _, q := range []string{"first?", "second?"} {
		if _, err := ss.Send(context.Background(), user(q)); err != nil {
			t.Fatal(err)
		}
	}
	lost := h.board.Recordings()

	cases := []struct {
		name       string
		checkpoint []board.Recording
		asks       []string
		wantAsked  int // requests the model gets
		wantAnswer []string
	}{
		{"both answered", lost, []string{"first?", "second?"}, 0, []string{"one", "two"}},
		{"first answered", lost[:1], []string{"first?", "second?"}, 1, []string{"one", "again"}},
		{"the request changed", lost, []string{"other?", "second?"}, 2, []string{"again", "again"}},
		{"none", nil, []string{"first?"}, 1, []string{"again"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newFake(t, openAIValidate, answer{body: oaAnswer("again", true)}, answer{body: oaAnswer("again", true)})
			h := newHarness(t, onePlan(openAIAgent(g.srv.URL)), nil)
			h.set.Resume(c.checkpoint)
			ss := h.session(t, "plan", "coder")
			for i, q := range c.asks {
				resp, err := ss.Send(context.Background(), user(q))
				if err != nil {
					t.Fatal(err)
				}
				if resp.Text != c.wantAnswer[i] {
					t.Errorf("call %d answered %q, want %q", i+1, resp.Text, c.wantAnswer[i])
				}
			}
			if n := len(g.requests()); n != c.wantAsked {
				t.Errorf("the model got %d requests, want %d", n, c.wantAsked)
			}
			recs := h.board.Recordings()
			if len(recs) != len(c.asks) {
				t.Fatalf("%d recordings, want %d", len(recs), len(c.asks))
			}
			for i, r := range recs {
				if strings.Contains(string(r.Response), `"reused":true`) {
					t.Errorf("call %d recorded as reused", i+1)
				}
				if i < len(c.checkpoint) && c.wantAnswer[i] != "again" && r.RequestSHA256 != c.checkpoint[i].RequestSHA256 {
					t.Errorf("call %d: request %s, checkpointed %s", i+1, r.RequestSHA256, c.checkpoint[i].RequestSHA256)
				}
			}
		})
	}
}

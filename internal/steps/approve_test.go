package steps

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// An MCP tool the agent's approve patterns name waits for a person, over
// a real provider's wire format: the run stops waiting with the tool and
// its arguments shown; once answered, the resumed visit takes its first
// model call from the recording (the model is asked once), runs the call
// if it was allowed, or tells the model who refused it and why; nothing
// is recorded twice.
func TestApproveMCPToolCall(t *testing.T) {
	cases := []struct {
		name      string
		answer    map[string]any
		toolCalls int32
		modelSaw  string
	}{
		{"allowed", map[string]any{"allow": true}, 1, "echo: hi"},
		{"refused", map[string]any{"allow": false, "reason": "not that text"}, 0, "error: ann refused this call; it was not run. Their reason: not that text"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := newToolServer(t)
			f := newWireFake(t, "openai", toolTurn{calls: [][2]string{{"edge__echo", `{"text":"hi"}`}}}, toolTurn{text: "done"})
			src := strings.Replace(mcpPlan("openai", f.srv.URL, ts.url, "edge.echo"), "    tools: [edge.echo]", "    tools: [edge.echo]\n    approve: {tools: [edge.e*], answerers: [ann]}", 1)
			prog, err := engine.Compile("plan.yaml", []byte(src), Registry())
			if err != nil {
				t.Fatal(err)
			}
			b := board.New(board.Run{ID: "run1"})
			run := func() error {
				r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: t.TempDir(), Agents: mcpAgents(t, src, agents.Options{}),
					Sleep: func(context.Context, time.Duration) error { return nil }}
				if err := r.Restore(); err != nil {
					return err
				}
				return r.Run(context.Background())
			}
			err = run()
			var re *engine.RunError
			if !errors.As(err, &re) || re.Status != engine.StatusWaiting {
				t.Fatalf("first part: %v, want waiting", err)
			}
			ws := b.Run().Waiting
			if len(ws) != 1 || ws[0].Label != "ask/approve-1" || ws[0].Tool == nil || ws[0].Tool.Name != "edge.echo" ||
				string(ws[0].Tool.Args) != `{"text":"hi"}` || strings.Join(ws[0].Answerers, ",") != "ann" || !strings.Contains(ws[0].Prompt, `"text": "hi"`) {
				t.Fatalf("waiting: %+v", ws)
			}
			if n := ts.calls.Load(); n != 0 {
				t.Fatalf("the tool ran before it was allowed (%d calls)", n)
			}
			a, _, err := Settle(b.Run(), b.Recordings(), board.Answer{Label: "ask/approve-1", Answer: c.answer, By: "ann"})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.AddRecording(AnswerRecording(a)); err != nil {
				t.Fatal(err)
			}
			if err := run(); err != nil {
				t.Fatalf("after the answer: %v", err)
			}
			if out := llmSaved(t, b, "ask")["output"]; out != "done" {
				t.Errorf("output = %v", out)
			}
			if n := ts.calls.Load(); n != c.toolCalls {
				t.Errorf("the tool ran %d times, want %d", n, c.toolCalls)
			}
			if f.requestText(2) != "" || !strings.Contains(f.requestText(1), c.modelSaw) {
				t.Errorf("the model's second request (of two) lacks %q: %s", c.modelSaw, f.requestText(1))
			}
			kinds := map[string]int{}
			for _, r := range b.Recordings() {
				kinds[r.Kind]++
			}
			if want := 1 + int(c.toolCalls); kinds[agents.KindLLM] != 2 || kinds[agents.KindMCP] != want {
				t.Errorf("recordings by kind = %v, want 2 llm and %d mcp", kinds, want)
			}
			if len(b.Run().Waiting) != 0 {
				t.Errorf("still waiting: %+v", b.Run().Waiting)
			}
		})
	}
}

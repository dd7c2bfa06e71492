package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// newSeatServer is an SDK MCP server over streamable HTTP named edge
// whose tool echo asks a person which seat (elicitation/create) before
// it answers with what it was told.
func newSeatServer(t *testing.T) (url string, asked *atomic.Int32) {
	asked = &atomic.Int32{}
	s := mcp.NewServer(&mcp.Implementation{Name: "edge", Version: "1"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Books a seat."}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		asked.Add(1)
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Which seat for " + in.Text + "?", RequestedSchema: json.RawMessage(
			`{"type":"object","properties":{"seat":{"type":"string","enum":["a","b"]},"meal":{"type":"boolean","default":true}},"required":["seat"]}`)})
		if err != nil {
			return nil, nil, err
		}
		content, _ := json.Marshal(res.Content)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("booked: %s %s", res.Action, content)}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL, asked
}

// What an MCP server asks a person during a tool call waits as an input
// does: the run stops waiting with the server's question and a form of
// its fields; once answered (runner answer's checks), the resumed visit
// takes its first model call from the recording, makes the tool call
// again and gives the server the answer (defaults filled in), and the
// model sees the result; an offline replay needs neither the server nor
// the person.
func TestElicitationWaitsForAPerson(t *testing.T) {
	cases := []struct {
		name     string
		answer   map[string]any
		live     bool // answered while the call is held open
		modelSaw string
	}{
		{"accepted", map[string]any{"action": "accept", "seat": "b"}, false, `booked: accept {\"meal\":true,\"seat\":\"b\"}`},
		{"declined", map[string]any{"action": "decline"}, false, "booked: decline null"},
		{"answered while held", map[string]any{"action": "accept", "seat": "a", "meal": false}, true, `booked: accept {\"meal\":false,\"seat\":\"a\"}`},
	}
	defer func(h time.Duration) { elicitHold = h }(elicitHold)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			elicitHold = 0
			if c.live {
				elicitHold = time.Minute
			}
			url, asked := newSeatServer(t)
			f := newWireFake(t, "openai", toolTurn{calls: [][2]string{{"edge__echo", `{"text":"ann"}`}}}, toolTurn{text: "done"})
			src := mcpPlan("openai", f.srv.URL, url, "edge.echo")
			prog, err := engine.Compile("plan.yaml", []byte(src), Registry())
			if err != nil {
				t.Fatal(err)
			}
			b := board.New(board.Run{ID: "run1"})
			run := func(set *agents.Set) error {
				r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: t.TempDir(), Agents: set,
					Sleep: func(context.Context, time.Duration) error { return nil }}
				if err := r.Restore(); err != nil {
					return err
				}
				return r.Run(context.Background())
			}
			if c.live {
				testElicitationLive(t, b, run, mcpAgents(t, src, agents.Options{}), c.answer)
			} else {
				testElicitationStops(t, b, run, src, c.answer)
			}
			if out := llmSaved(t, b, "ask")["output"]; out != "done" {
				t.Errorf("output = %v", out)
			}
			calls := int32(2) // once to ask, once to answer
			if c.live {
				calls = 1
			}
			if n := asked.Load(); n != calls {
				t.Errorf("the server was called %d times, want %d", n, calls)
			}
			if f.requestText(2) != "" || !strings.Contains(f.requestText(1), c.modelSaw) {
				t.Errorf("the model's second request (of two) lacks %q: %s", c.modelSaw, f.requestText(1))
			}
			if len(b.Run().Waiting) != 0 {
				t.Errorf("still waiting: %+v", b.Run().Waiting)
			}

			// Offline replay: the model and the server are gone.
			f.srv.Close()
			set := llmAgents(t, src, agents.Options{Replay: agents.FromRecordings(b.Recordings()),
				Getenv: func(string) string { return "" }, HTTPClient: &http.Client{Transport: llmNoNetwork{t}}})
			defer set.Close()
			rb, err := llmRunPlan(t, src, set)
			if err != nil {
				t.Fatal(err)
			}
			if out := llmSaved(t, rb, "ask")["output"]; out != "done" {
				t.Errorf("replayed output = %v", out)
			}
			if n := asked.Load(); n != calls {
				t.Errorf("the replay called the server (%d calls)", n)
			}
		})
	}
}

// testElicitationStops: nobody answers while the call is held, so the
// run stops waiting, with the server's question and a form of its
// fields; the answer (runner answer's checks) is recorded and the run
// resumed.
func testElicitationStops(t *testing.T, b *board.Board, run func(*agents.Set) error, src string, answer map[string]any) {
	t.Helper()
	err := run(mcpAgents(t, src, agents.Options{}))
	var re *engine.RunError
	if !errors.As(err, &re) || re.Status != engine.StatusWaiting {
		t.Fatalf("first part: %v, want waiting", err)
	}
	ws := b.Run().Waiting
	if len(ws) != 1 || ws[0].Label != "ask/elicit-1" || !strings.Contains(ws[0].Prompt, "MCP server edge asks, during tool call edge.echo of agent coder (step ask):\nWhich seat for ann?") {
		t.Fatalf("waiting: %+v", ws)
	}
	// The SDK hands the schema over as a map: its fields come in
	// name order.
	const wantForm = `{"type":"object","properties":{` +
		`"action":{"type":"string","enum":["accept","decline","cancel"],"description":"accept sends the fields to the server; decline or cancel sends none"},` +
		`"meal":{"description":"(default true)","type":"boolean"},` +
		`"seat":{"description":"(required to accept)","enum":["a","b"],"type":"string"}},"required":["action"]}`
	if form := string(ws[0].Form); form != wantForm {
		t.Errorf("form:\n%s\nwant\n%s", form, wantForm)
	}
	if _, _, err := Settle(b.Run(), b.Recordings(), board.Answer{Label: "ask/elicit-1", Answer: map[string]any{"seat": "c", "action": "accept"}}); err == nil {
		t.Error("an answer the form refuses was taken")
	}
	a, _, err := Settle(b.Run(), b.Recordings(), board.Answer{Label: "ask/elicit-1", Answer: answer, By: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddRecording(AnswerRecording(a)); err != nil {
		t.Fatal(err)
	}
	if err := run(mcpAgents(t, src, agents.Options{})); err != nil {
		t.Fatalf("after the answer: %v", err)
	}
}

// testElicitationLive: the answer comes while the call is held open (as
// runner answer gives it to the running run): the same call goes on.
func testElicitationLive(t *testing.T, b *board.Board, run func(*agents.Set) error, set *agents.Set, answer map[string]any) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- run(set) }()
	deadline := time.Now().Add(20 * time.Second)
	for len(b.Run().Waiting) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the run never waited for the answer")
		}
		time.Sleep(10 * time.Millisecond)
	}
	a, _, err := Settle(b.Run(), b.Recordings(), board.Answer{Label: "ask/elicit-1", Answer: answer, By: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddRecording(AnswerRecording(a)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not go on after the answer")
	}
}

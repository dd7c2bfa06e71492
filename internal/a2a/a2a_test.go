package a2a_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"

	"github.com/planrunner/runner/internal/a2a"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/runs"
)

// testAgent is a small agent on the SDK's server: how it answers depends
// on the first word of the message.
type testAgent struct{}

func (testAgent) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	text := a2a.PartsText(rc.Message.Parts)
	word, _, _ := strings.Cut(text, " ")
	switch word {
	case "message": // a message and no task
		return q.Write(ctx, sdk.NewMessage(sdk.MessageRoleAgent, sdk.TextPart{Text: "a message back"}))
	case "ask": // a question back
		ev := sdk.NewStatusUpdateEvent(rc, sdk.TaskStateInputRequired, sdk.NewMessageForTask(sdk.MessageRoleAgent, rc, sdk.TextPart{Text: "which city?"}))
		ev.Final = true
		return q.Write(ctx, ev)
	case "fail":
		ev := sdk.NewStatusUpdateEvent(rc, sdk.TaskStateFailed, sdk.NewMessageForTask(sdk.MessageRoleAgent, rc, sdk.TextPart{Text: "out of paper"}))
		ev.Final = true
		return q.Write(ctx, ev)
	}
	if err := q.Write(ctx, sdk.NewStatusUpdateEvent(rc, sdk.TaskStateWorking, nil)); err != nil {
		return err
	}
	art := sdk.NewArtifactEvent(rc, sdk.TextPart{Text: "echo: " + text}, sdk.DataPart{Data: map[string]any{"words": len(strings.Fields(text))}})
	if err := q.Write(ctx, art); err != nil {
		return err
	}
	ev := sdk.NewStatusUpdateEvent(rc, sdk.TaskStateCompleted, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

func (testAgent) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	return q.Write(ctx, sdk.NewStatusUpdateEvent(rc, sdk.TaskStateCanceled, nil))
}

// serveAgent serves the test agent at URL/agent; a request to
// URL/silent/... is held unanswered until the client gives up.
func serveAgent(t *testing.T) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	card := &sdk.AgentCard{Name: "echo", Description: "echoes", URL: base + "/agent", PreferredTransport: sdk.TransportProtocolJSONRPC,
		ProtocolVersion: "0.3.0", Version: "1", DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []sdk.AgentSkill{{ID: "echo", Name: "echo", Description: "echoes", Tags: []string{"test"}}}}
	silent := make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("/agent"+a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/agent", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(testAgent{})))
	mux.HandleFunc("/silent/", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-silent:
		}
	})
	ts.Config.Handler = mux
	ts.Start()
	t.Cleanup(func() { close(silent); ts.Close() })
	return ts
}

// plan writes a plan whose llm step asks the agent at url.
func plan(t *testing.T, dir, url, prompt string) string {
	t.Helper()
	src := `version: 1
name: ask
agents:
  remote: {provider: a2a, base_url: "` + url + `", timeout: 2s}
steps:
  - {label: ask, type: llm, agent: remote, prompt: "` + prompt + `"}
  - {label: after, type: command, run: "echo got ${{ steps.ask.output }}"}
`
	p := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func outputOf(t *testing.T, b *board.Board, label string) string {
	t.Helper()
	for _, s := range b.Steps() {
		if s.Label == label {
			var r struct {
				Output any `json:"output"`
			}
			if err := json.Unmarshal(s.Result, &r); err != nil {
				t.Fatal(err)
			}
			if str, ok := r.Output.(string); ok {
				return str
			}
			out, _ := json.Marshal(r.Output)
			return string(out)
		}
	}
	return ""
}

// TestAgentProvider: an llm step asks an agent on the SDK's server; what
// it answers is the step's output, what it cannot answer fails the step
// saying why; a run that succeeded replays offline, the agent gone, to
// the same board.
func TestAgentProvider(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	ts := serveAgent(t)
	tests := []struct {
		name, path, prompt string
		want               string // the ask step's output
		fails              string // or the run's error
	}{
		{"message", "/agent", "message me", "a message back", ""},
		{"input required", "/agent", "ask me", "", "the A2A agent echo asks for input"},
		{"failed task", "/agent", "fail now", "", "ended failed: out of paper"},
		{"silent agent", "/silent", "hello", "", "did not answer within 2s"},
		{"no agent card", "/nothing", "hello", "", "reading the agent card at"},
		// Last: its replay closes the server.
		{"task with artifacts", "/agent", "echo these words", `echo: echo these words` + "\n\n" + `{"words":3}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := runs.Start(ctx, runs.Options{Plan: plan(t, dir, ts.URL+tt.path, tt.prompt), Workdir: dir}, runs.Env{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.fails != "" {
				if res.Err == nil || !strings.Contains(res.Board.Run().Error, tt.fails) {
					t.Fatalf("run error = %v (%s), want %q in it", res.Err, res.Board.Run().Error, tt.fails)
				}
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if got := outputOf(t, res.Board, "ask"); got != tt.want {
				t.Fatalf("ask = %q, want %q", got, tt.want)
			}
			recorded := res.Board.Path()
			if t.Name() != "TestAgentProvider/task_with_artifacts" {
				return
			}
			// Offline, the agent's server closed.
			ts.Close()
			rep, err := runs.Replay(ctx, recorded, runs.ReplayOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Matched() || rep.RunErr != nil || rep.Answers != 1 {
				t.Fatalf("replay: matched %v, err %v, %d answers, divergence %v", rep.Matched(), rep.RunErr, rep.Answers, rep.Divergence)
			}
			for _, label := range []string{"ask", "after"} {
				if got, want := outputOf(t, rep.Board, label), outputOf(t, res.Board, label); got != want {
					t.Errorf("replayed %s = %q, recorded %q", label, got, want)
				}
			}
		})
	}
}

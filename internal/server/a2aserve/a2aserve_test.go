package a2aserve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/planrunner/runner/internal/a2a"
	"github.com/planrunner/runner/internal/server/a2aserve"
)

const testToken = "test-token-0123456789abcdef"

// serve starts a server of the testdata plans and returns its URL.
func serve(t *testing.T, token string) string {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	srv, err := a2aserve.New(a2aserve.Options{
		Plans:   []string{filepath.Join("testdata", "greet.yaml"), filepath.Join("testdata", "deploy.yaml"), filepath.Join("testdata", "slow.yaml")},
		Workdir: t.TempDir(), BaseURL: base, Token: token, Version: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = srv.Handler()
	ts.Start()
	t.Cleanup(ts.Close)
	return base
}

// bearerClient sends the token with every request.
type bearerClient struct{ token string }

func (b bearerClient) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// client is the SDK's client of one agent, found through its card.
func client(t *testing.T, ctx context.Context, base, name, token string) *a2aclient.Client {
	t.Helper()
	card, err := agentcard.DefaultResolver.Resolve(ctx, base+"/"+name)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	if token != "" {
		hc.Transport = bearerClient{token}
	}
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Destroy() })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func text(m *sdk.Message) string {
	if m == nil {
		return ""
	}
	return a2a.PartsText(m.Parts)
}

func send(t *testing.T, ctx context.Context, c *a2aclient.Client, msg *sdk.Message) *sdk.Task {
	t.Helper()
	res, err := c.SendMessage(ctx, &sdk.MessageSendParams{Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*sdk.Task)
	if !ok {
		t.Fatalf("answer is a %T, want a task", res)
	}
	return task
}

// TestCard: each plan's card says what the plan is, what it takes (its
// vars as a JSON Schema) and how to call it (JSON-RPC, a bearer token).
func TestCard(t *testing.T) {
	base := serve(t, testToken)
	ctx := testCtx(t)
	tests := []struct {
		name, desc string
		vars       string
	}{
		{"greet", "Greets someone.", `{"additionalProperties":false,"properties":{"who":{"default":"world","type":"string"}},"type":"object"}`},
		{"deploy", "Asks where to deploy, then deploys.", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			card, err := agentcard.DefaultResolver.Resolve(ctx, base+"/"+tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if card.Name != tt.name || card.Description != tt.desc || card.URL != base+"/"+tt.name ||
				card.PreferredTransport != sdk.TransportProtocolJSONRPC || !card.Capabilities.Streaming {
				t.Errorf("card = %+v", card)
			}
			if len(card.Skills) != 1 || card.Skills[0].ID != tt.name {
				t.Errorf("skills = %+v", card.Skills)
			}
			if _, ok := card.SecuritySchemes["bearer"]; !ok || len(card.Security) != 1 {
				t.Errorf("security = %+v %+v, want the bearer scheme required", card.SecuritySchemes, card.Security)
			}
			var got string
			for _, e := range card.Capabilities.Extensions {
				if e.URI == a2aserve.ExtensionURI {
					got = jsonOf(t, e.Params["schema"])
				}
			}
			if got != tt.vars {
				t.Errorf("input schema = %s, want %s", got, tt.vars)
			}
		})
	}
}

// TestSend: a message starts a run with the data part's inputs; the
// task completes with the plan's outputs as its artifact.
func TestSend(t *testing.T) {
	base := serve(t, testToken)
	ctx := testCtx(t)
	c := client(t, ctx, base, "greet", testToken)
	tests := []struct {
		name  string
		parts []sdk.Part
		want  string
	}{
		{"default inputs", []sdk.Part{sdk.TextPart{Text: "go"}}, `{"greeting":"hello world","loud":"WORLD"}`},
		{"inputs in a data part", []sdk.Part{sdk.DataPart{Data: map[string]any{"who": "agents"}}}, `{"greeting":"hello agents","loud":"AGENTS"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := send(t, ctx, c, sdk.NewMessage(sdk.MessageRoleUser, tt.parts...))
			if task.Status.State != sdk.TaskStateCompleted {
				t.Fatalf("state %s: %s", task.Status.State, text(task.Status.Message))
			}
			if len(task.Artifacts) != 1 || a2a.PartsText(task.Artifacts[0].Parts) != tt.want {
				t.Fatalf("artifacts = %s, want one of %s", jsonOf(t, task.Artifacts), tt.want)
			}
		})
	}
	t.Run("an input the plan does not have", func(t *testing.T) {
		task := send(t, ctx, c, sdk.NewMessage(sdk.MessageRoleUser, sdk.DataPart{Data: map[string]any{"whom": "x"}}))
		if task.Status.State != sdk.TaskStateRejected || !strings.Contains(text(task.Status.Message), `no input "whom" (its inputs: who)`) {
			t.Fatalf("state %s: %s", task.Status.State, text(task.Status.Message))
		}
	})
}

// TestToken: a protocol call without the token is refused.
func TestToken(t *testing.T) {
	base := serve(t, testToken)
	ctx := testCtx(t)
	c := client(t, ctx, base, "greet", "")
	_, err := c.SendMessage(ctx, &sdk.MessageSendParams{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.TextPart{Text: "go"})})
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("err = %v, want a 401", err)
	}
}

// TestStream: steps starting and ending come as working status updates,
// then the artifact, then the final completed state.
func TestStream(t *testing.T) {
	base := serve(t, "")
	ctx := testCtx(t)
	c := client(t, ctx, base, "greet", "")
	var got []string
	for ev, err := range c.SendStreamingMessage(ctx, &sdk.MessageSendParams{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.TextPart{Text: "go"})}) {
		if err != nil {
			t.Fatal(err)
		}
		switch v := ev.(type) {
		case *sdk.TaskStatusUpdateEvent:
			line := string(v.Status.State)
			if v.Status.State == sdk.TaskStateWorking {
				line += ": " + strings.SplitN(text(v.Status.Message), "\n", 2)[0]
			}
			if v.Final {
				line += " (final)"
			}
			got = append(got, line)
		case *sdk.TaskArtifactUpdateEvent:
			got = append(got, "artifact "+v.Artifact.Name)
		case *sdk.Task:
			got = append(got, "task "+string(v.Status.State))
		}
	}
	// The run's id is new every time: the line that names it is checked
	// apart.
	if len(got) < 1 || !strings.HasPrefix(got[0], "working: run ") || !strings.HasSuffix(got[0], " started") {
		t.Fatalf("events = %q", got)
	}
	got = got[1:]
	want := []string{
		"working: step hello started", "working: step hello succeeded",
		"working: step shout started", "working: step shout succeeded",
		"artifact outputs", "completed (final)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestInputRequired: a run at an input step makes the task input-required
// with the step's question and form; a message to the task answers it
// (a wrong answer is refused and the task still waits) and the run goes
// on to the end.
func TestInputRequired(t *testing.T) {
	base := serve(t, "")
	ctx := testCtx(t)
	c := client(t, ctx, base, "deploy", "")
	task := send(t, ctx, c, sdk.NewMessage(sdk.MessageRoleUser, sdk.TextPart{Text: "deploy please"}))
	if task.Status.State != sdk.TaskStateInputRequired || !strings.Contains(text(task.Status.Message), "step where waits for an answer: Which environment?") {
		t.Fatalf("state %s: %s", task.Status.State, text(task.Status.Message))
	}
	if !strings.Contains(text(task.Status.Message), `"form":{"properties":{"env"`) {
		t.Errorf("the question has no form: %s", text(task.Status.Message))
	}
	answers := []struct {
		name  string
		parts []sdk.Part
		state sdk.TaskState
		want  string
	}{
		{"not in the form's enum", []sdk.Part{sdk.DataPart{Data: map[string]any{"env": "moon"}}}, sdk.TaskStateInputRequired, "the answer was not taken"},
		{"as text for the form's one field", []sdk.Part{sdk.TextPart{Text: "production"}}, sdk.TaskStateCompleted, "deploying to production"},
	}
	for _, a := range answers {
		t.Run(a.name, func(t *testing.T) {
			msg := sdk.NewMessageForTask(sdk.MessageRoleUser, task, a.parts...)
			got := send(t, ctx, c, msg)
			if got.Status.State != a.state {
				t.Fatalf("state %s, want %s: %s", got.Status.State, a.state, text(got.Status.Message))
			}
			all := text(got.Status.Message)
			for _, art := range got.Artifacts {
				all += "\n" + a2a.PartsText(art.Parts)
			}
			if !strings.Contains(all, a.want) {
				t.Errorf("task says %q, want %q in it", all, a.want)
			}
		})
	}
}

// TestCancel: canceling a task stops its run, and the task ends canceled.
func TestCancel(t *testing.T) {
	base := serve(t, "")
	ctx := testCtx(t)
	c := client(t, ctx, base, "slow", "")
	var id sdk.TaskID
	var last sdk.TaskState
	start := time.Now()
	for ev, err := range c.SendStreamingMessage(ctx, &sdk.MessageSendParams{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.TextPart{Text: "go"})}) {
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := ev.(*sdk.TaskStatusUpdateEvent); ok {
			id, last = v.TaskID, v.Status.State
			if strings.HasPrefix(text(v.Status.Message), "step wait started") {
				if _, err := c.CancelTask(ctx, &sdk.TaskIDParams{ID: id}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if last != sdk.TaskStateCanceled {
		t.Fatalf("last state %s, want canceled", last)
	}
	if time.Since(start) > 50*time.Second {
		t.Errorf("the run was not stopped: it took %s", time.Since(start))
	}
	task, err := c.GetTask(ctx, &sdk.TaskQueryParams{ID: id})
	if err != nil || task.Status.State != sdk.TaskStateCanceled {
		t.Fatalf("task = %+v, %v", task, err)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

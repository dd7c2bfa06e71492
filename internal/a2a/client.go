// Package a2a is runner's client of the Agent2Agent (A2A) protocol: it
// asks a remote agent one question and waits, bounded, for its answer,
// through the official SDK (github.com/a2aproject/a2a-go). The agents
// package makes it the `a2a` provider of llm steps, and records and
// replays its exchanges as it does a model's; this package records
// nothing. It imports the SDK and the standard library only.
package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
)

// CardPath is where an agent's card is, under its URL.
const CardPath = "/.well-known/agent-card.json"

// Request is one question to a remote agent.
type Request struct {
	// URL is the agent's base URL: its card is at URL + CardPath.
	URL string
	// Text is the question.
	Text string
	// Data, when set, goes along as a data part (structured input).
	Data map[string]any
	// Token, when set, is sent as `Authorization: Bearer TOKEN` with the
	// protocol's calls (not with the card, which is public).
	Token string
	// HTTPClient makes the requests; nil: a plain client (the context
	// bounds each call).
	HTTPClient *http.Client
	// Poll is how often a task the agent left running is asked about;
	// 0: every second.
	Poll time.Duration
}

// Answer is what the agent answered.
type Answer struct {
	// Agent is the name on the agent's card.
	Agent string
	// Text is the answer: the text of the task's artifacts (or of the
	// agent's message), data parts as compact JSON, parts separated by
	// blank lines.
	Text string
	// TaskID is the remote task's id ("" when the agent answered with a
	// message and no task).
	TaskID string
}

// InputRequiredError is an agent that asked a question back (its task is
// input-required or auth-required): runner does not answer for the plan,
// so the call fails with the agent's question.
type InputRequiredError struct {
	Agent    string
	State    string
	TaskID   string
	Question string
}

func (e *InputRequiredError) Error() string {
	q := e.Question
	if q == "" {
		q = "(no message)"
	}
	return fmt.Sprintf("the A2A agent %s asks for input (task %s is %s): %s; an llm step cannot answer it: give the agent all it needs in the prompt", e.Agent, e.TaskID, e.State, q)
}

// TaskError is a task that ended without an answer: failed, rejected or
// canceled.
type TaskError struct {
	Agent   string
	State   string
	TaskID  string
	Message string
}

func (e *TaskError) Error() string {
	m := e.Message
	if m == "" {
		m = "(no message)"
	}
	return fmt.Sprintf("the A2A agent %s's task %s ended %s: %s", e.Agent, e.TaskID, e.State, m)
}

// Ask sends the question and waits for the agent's answer, until ctx ends:
// a silent agent fails with the time it was given.
func Ask(ctx context.Context, r Request) (*Answer, error) {
	start := time.Now()
	ans, err := ask(ctx, r)
	if err != nil && ctx.Err() != nil {
		limit := ""
		if dl, ok := ctx.Deadline(); ok {
			limit = fmt.Sprintf(" within %s", dl.Sub(start).Round(time.Millisecond))
		}
		return nil, fmt.Errorf("the A2A agent at %s did not answer%s: %w", r.URL, limit, ctx.Err())
	}
	return ans, err
}

func ask(ctx context.Context, r Request) (*Answer, error) {
	hc := r.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	card, err := agentcard.NewResolver(hc).Resolve(ctx, r.URL)
	if err != nil {
		return nil, fmt.Errorf("reading the agent card at %s%s: %w", strings.TrimRight(r.URL, "/"), CardPath, err)
	}
	if r.Token != "" {
		hc = withBearer(hc, r.Token)
	}
	cl, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithDefaultsDisabled(), a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		return nil, fmt.Errorf("the A2A agent %s (%s): %w (runner speaks JSON-RPC)", card.Name, r.URL, err)
	}
	defer cl.Destroy()
	parts := sdk.ContentParts{sdk.TextPart{Text: r.Text}}
	if r.Data != nil {
		parts = append(parts, sdk.DataPart{Data: r.Data})
	}
	blocking := true
	res, err := cl.SendMessage(ctx, &sdk.MessageSendParams{
		Message: sdk.NewMessage(sdk.MessageRoleUser, parts...),
		Config:  &sdk.MessageSendConfig{Blocking: &blocking, AcceptedOutputModes: []string{"text/plain", "application/json"}},
	})
	if err != nil {
		return nil, fmt.Errorf("the A2A agent %s (%s): %w", card.Name, r.URL, err)
	}
	poll := r.Poll
	if poll <= 0 {
		poll = time.Second
	}
	for {
		switch v := res.(type) {
		case *sdk.Message:
			return &Answer{Agent: card.Name, Text: PartsText(v.Parts), TaskID: string(v.TaskID)}, nil
		case *sdk.Task:
			ans, done, err := settled(card.Name, v)
			if done || err != nil {
				return ans, err
			}
			// Still working (an agent may answer a blocking call early):
			// asked again until it settles or ctx ends.
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(poll):
			}
			t, err := cl.GetTask(ctx, &sdk.TaskQueryParams{ID: v.ID})
			if err != nil {
				return nil, fmt.Errorf("the A2A agent %s (%s): task %s: %w", card.Name, r.URL, v.ID, err)
			}
			res = t
		default:
			return nil, fmt.Errorf("the A2A agent %s (%s) answered with a %T, neither a message nor a task", card.Name, r.URL, res)
		}
	}
}

// settled reads a task's answer: done once it has one, or an error for a
// task that will give none.
func settled(agent string, t *sdk.Task) (*Answer, bool, error) {
	msg := ""
	if t.Status.Message != nil {
		msg = PartsText(t.Status.Message.Parts)
	}
	switch t.Status.State {
	case sdk.TaskStateCompleted:
		var texts []string
		for _, a := range t.Artifacts {
			if s := PartsText(a.Parts); s != "" {
				texts = append(texts, s)
			}
		}
		text := strings.Join(texts, "\n\n")
		if text == "" {
			text = msg
		}
		return &Answer{Agent: agent, Text: text, TaskID: string(t.ID)}, true, nil
	case sdk.TaskStateInputRequired, sdk.TaskStateAuthRequired:
		return nil, true, &InputRequiredError{Agent: agent, State: string(t.Status.State), TaskID: string(t.ID), Question: msg}
	case sdk.TaskStateFailed, sdk.TaskStateRejected, sdk.TaskStateCanceled, sdk.TaskStateUnknown:
		return nil, true, &TaskError{Agent: agent, State: string(t.Status.State), TaskID: string(t.ID), Message: msg}
	}
	return nil, false, nil
}

// PartsText is parts as text: text parts as they are, data parts as
// compact JSON, files by name or URI; one blank line between parts.
func PartsText(parts sdk.ContentParts) string {
	var out []string
	for _, p := range parts {
		switch v := p.(type) {
		case sdk.TextPart:
			out = append(out, v.Text)
		case *sdk.TextPart:
			out = append(out, v.Text)
		case sdk.DataPart:
			out = append(out, dataText(v.Data))
		case *sdk.DataPart:
			out = append(out, dataText(v.Data))
		case sdk.FilePart:
			out = append(out, fileText(v))
		case *sdk.FilePart:
			out = append(out, fileText(*v))
		}
	}
	return strings.Join(out, "\n\n")
}

func dataText(d map[string]any) string {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Sprint(d)
	}
	return string(b)
}

func fileText(f sdk.FilePart) string {
	switch v := f.File.(type) {
	case sdk.FileURI:
		return "[file " + v.Name + " " + v.URI + "]"
	case sdk.FileBytes:
		return "[file " + v.Name + "]"
	}
	return "[file]"
}

// withBearer is hc sending the token with every request.
func withBearer(hc *http.Client, token string) *http.Client {
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = bearer{base: base, value: "Bearer " + token}
	return &c
}

type bearer struct {
	base  http.RoundTripper
	value string
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", b.value)
	return b.base.RoundTrip(r)
}

// IsInputRequired says whether err is an agent asking for input.
func IsInputRequired(err error) bool {
	var ir *InputRequiredError
	return errors.As(err, &ir)
}

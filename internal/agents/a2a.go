package agents

import (
	"context"
	"fmt"
	"strings"

	"github.com/planrunner/runner/internal/a2a"
	"github.com/planrunner/runner/internal/sys/mask"
)

// remoteAgent is the a2a provider: a remote agent asked over the A2A
// protocol (internal/a2a). Its exchange is recorded and replayed as a
// model's: the request is the step's conversation, the answer the text
// the agent gave, so a replay needs neither the agent nor the network.
type remoteAgent struct {
	t     *transport
	agent *Agent
	url   string
	token string
	mask  *mask.Masker
}

func newRemoteAgent(a *Agent, t *transport, getenv func(string) string, m *mask.Masker) (provider, error) {
	u, err := baseURL(a, "")
	if err != nil {
		return nil, err
	}
	if u == "" {
		return nil, fmt.Errorf("agent %s: the a2a provider needs base_url, the remote agent's URL", a.Name)
	}
	// A token is optional: many agents want none.
	token := ""
	if a.Spec.APIKeyEnv != "" {
		token = strings.TrimSpace(getenv(a.Spec.APIKeyEnv))
	}
	if m == nil {
		m = mask.New()
	}
	m.Add(token)
	return &remoteAgent{t: t, agent: a, url: u, token: token, mask: m}, nil
}

// complete sends the conversation as one text message: the system prompt
// and each turn, as a person would paste them; a remote agent keeps no
// conversation of ours between calls. An agent that asks a question back
// fails the call (a2a.InputRequiredError): the plan cannot answer for a
// person.
func (r *remoteAgent) complete(ctx context.Context, c *callInfo, req *Request) (*Response, int, error) {
	ctx, cancel := context.WithTimeout(ctx, r.agent.Timeout)
	defer cancel()
	ans, err := a2a.Ask(ctx, a2a.Request{URL: r.url, Text: remoteText(req), Token: r.token, HTTPClient: r.t.client})
	if err != nil {
		return nil, 0, fmt.Errorf("%s", r.mask.String(err.Error()))
	}
	c.log.Debug().Str("agent", r.agent.Name).Str("remote", ans.Agent).Str("task", ans.TaskID).Msg("A2A agent answered")
	model := req.Model
	if model == "" {
		model = "a2a:" + ans.Agent
	}
	text := r.mask.String(ans.Text)
	// The agent's tokens are its own: none are counted against the run's
	// limits, and the call costs the run nothing it can price.
	return &Response{Text: text, Model: model, FinishReason: "stop", Priced: true}, 0, nil
}

// remoteText is a request as the one message a remote agent gets.
func remoteText(req *Request) string {
	if len(req.Messages) == 1 && req.System == "" {
		return req.Messages[0].Content
	}
	var b strings.Builder
	if req.System != "" {
		b.WriteString(req.System + "\n\n")
	}
	for i, m := range req.Messages {
		if i > 0 {
			b.WriteString("\n\n")
		}
		if len(req.Messages) > 1 {
			b.WriteString(m.Role + ": ")
		}
		b.WriteString(m.Content)
	}
	return b.String()
}

package tracing

import (
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"go.opentelemetry.io/otel/attribute"
)

// The values of error.type runner reports (the conventions ask
// instrumentations to list them; docs/tracing.md does). A provider's
// own error type or code, or the HTTP status when it sends neither,
// comes first; these are for the rest.
const (
	// errTimeout: a model call that got no (complete) answer in time.
	errTimeout = "timeout"
	// errCanceled: a model call the run stopped.
	errCanceled = "canceled"
	// errOther: the conventions' fallback, for a call that failed
	// otherwise (the connection, an answer runner could not read).
	errOther = "_OTHER"
	// errToolError: a tool call that answered with an error.
	errToolError = "tool_error"
)

// agentInfo is what the plan, with the run's --agent overrides, says of
// an agent.
type agentInfo struct {
	provider, model, baseURL string
}

// planInfo is what the saved plan says that the spans need: its agents,
// and the agent of each llm step by label.
type planInfo struct {
	agents    map[string]agentInfo
	stepAgent map[string]string
}

// readPlan reads the run's saved plan.
func readPlan(run board.Run) planInfo {
	pi := planInfo{agents: map[string]agentInfo{}, stepAgent: map[string]string{}}
	if p, err := plans.Parse(run.PlanPath, []byte(run.PlanSource)); err == nil {
		for _, a := range p.Agents {
			pi.agents[a.Name] = agentInfo{provider: a.Provider, model: a.Model, baseURL: a.BaseURL}
		}
		for _, s := range p.AllSteps() {
			if s.Node == nil {
				continue
			}
			for i := 0; i+1 < len(s.Node.Content); i += 2 {
				if s.Node.Content[i].Value == "agent" {
					pi.stepAgent[s.Label] = s.Node.Content[i+1].Value
				}
			}
		}
	}
	for name, fields := range run.Agents {
		a := pi.agents[name]
		if v := fields["provider"]; v != "" {
			a.provider = v
		}
		if v := fields["model"]; v != "" {
			a.model = v
		}
		if v := fields["base_url"]; v != "" {
			a.baseURL = v
		}
		pi.agents[name] = a
	}
	return pi
}

// agentOf is the agent a step visit asked: the one that answered, as its
// result says, else the step's own in the plan (a visit whose call
// failed has no result), else the one its error names.
func (pi planInfo) agentOf(s board.StepRecord, res map[string]any) string {
	if a, _ := res["agent"].(string); a != "" {
		return a
	}
	if a := pi.stepAgent[engine.BaseLabel(s.Label)]; a != "" && !strings.Contains(a, "{{") {
		return a
	}
	if m := callErr.FindStringSubmatch(s.Error); m != nil {
		return m[1]
	}
	return ""
}

// server is where an agent's calls go, for server.address and
// server.port: its base_url, else its provider's API.
func (a agentInfo) server() (string, int) {
	base := a.baseURL
	if base == "" {
		switch a.provider {
		case "openai":
			base = agents.DefaultOpenAIBaseURL
		case "anthropic":
			base = agents.DefaultAnthropicBaseURL
		default:
			return "", 0
		}
	}
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" {
		return "", 0
	}
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err == nil {
			port = n
		}
	}
	return u.Hostname(), port
}

// serverAttrs are the chat span's server.address and server.port.
func (a agentInfo) serverAttrs() []attribute.KeyValue {
	host, port := a.server()
	if host == "" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	return []attribute.KeyValue{attribute.String("server.address", host), attribute.Int("server.port", port)}
}

// callErr finds a failed model call in a step's error: the agent
// session's "agent NAME: " before the provider's "PROVIDER: " or
// "PROVIDER (MODEL): " (internal/agents), at the start or after a
// wrapper's ": ".
var callErr = regexp.MustCompile(`(?:^|: )agent (\S+): ([a-z][a-z0-9_.-]*)(?: \([^)]*\))?: (.*)`)

// apiErr is an agents.APIError's text: the HTTP status, then the
// provider's error code or type when it sent one.
var apiErr = regexp.MustCompile(`^(\d{3})(?: ([A-Za-z_][A-Za-z0-9_.-]*))?(?:$|: | \()`)

// modelCallError reads a failed model call from a step's error: the
// agent, its provider as the error names it, and the error's type for
// error.type. ok is false when the step failed otherwise (before its
// call was made, or after its answer came).
func modelCallError(msg string) (agent, provider, errType string, ok bool) {
	m := callErr.FindStringSubmatch(msg)
	if m == nil {
		return "", "", "", false
	}
	agent, provider, rest := m[1], m[2], m[3]
	// The first failure only: a fallback's own come after it.
	rest, _, _ = strings.Cut(rest, "; its fallbacks failed too")
	switch a := apiErr.FindStringSubmatch(rest); {
	case a != nil && a[2] != "":
		errType = a[2]
	case a != nil:
		errType = a[1]
	case strings.Contains(rest, "context canceled"):
		errType = errCanceled
	case strings.Contains(rest, "deadline exceeded") || strings.Contains(rest, "timeout") ||
		strings.HasPrefix(rest, "no complete ") || strings.HasPrefix(rest, "nothing more of the "):
		errType = errTimeout
	default:
		errType = errOther
	}
	return agent, provider, errType, true
}

// usageAttrs are the conventions' token counts of u: input tokens
// include the cached ones (internal/agents adds Anthropic's, which it
// reports apart), output tokens the reasoning ones.
func usageAttrs(u agents.Usage) []attribute.KeyValue {
	a := []attribute.KeyValue{
		attribute.Int("gen_ai.usage.input_tokens", u.InputTokens),
		attribute.Int("gen_ai.usage.output_tokens", u.OutputTokens),
	}
	if u.CacheReadInputTokens > 0 {
		a = append(a, attribute.Int("gen_ai.usage.cache_read.input_tokens", u.CacheReadInputTokens))
	}
	if u.CacheCreationInputTokens > 0 {
		a = append(a, attribute.Int("gen_ai.usage.cache_creation.input_tokens", u.CacheCreationInputTokens))
	}
	if u.ReasoningTokens > 0 {
		a = append(a, attribute.Int("gen_ai.usage.reasoning.output_tokens", u.ReasoningTokens))
	}
	return a
}

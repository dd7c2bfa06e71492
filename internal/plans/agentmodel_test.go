package plans

import (
	"strings"
	"testing"
)

// stream, thinking and the cache prices of price: what they read as, and
// what is refused with them.
func TestAgentStreamThinkingAndCachePrices(t *testing.T) {
	for _, tc := range []struct {
		name, agent string
		check       func(*Agent) bool
		errs        []string
	}{
		{name: "stream and thinking", agent: `{provider: anthropic, model: claude-opus-5-5, stream: true, thinking: 4096}`,
			check: func(a *Agent) bool { return a.Stream && a.Thinking == 4096 }},
		{name: "cache prices", agent: `{provider: anthropic, model: m, price: {input: 2, output: 10, cached_input: 0.1, cache_write: 2.5}}`,
			check: func(a *Agent) bool {
				p := a.Price
				return p.Input == 2 && p.Output == 10 && *p.CachedInput == 0.1 && *p.CacheWrite == 2.5
			}},
		{name: "cache prices are optional", agent: `{provider: anthropic, model: m, price: {input: 2, output: 10}}`,
			check: func(a *Agent) bool { return a.Price.CachedInput == nil && a.Price.CacheWrite == nil }},
		{name: "a small budget", agent: `{provider: anthropic, model: m, thinking: 100}`,
			errs: []string{"agent a: thinking is a token budget of at least 1024"}},
		{name: "budget over max_tokens", agent: `{provider: anthropic, model: m, thinking: 2048, max_tokens: 2000}`,
			errs: []string{"agent a: max_tokens (2000) must be more than the thinking budget (2048)"}},
		{name: "thinking with temperature", agent: `{provider: anthropic, model: m, thinking: 2048, temperature: 0}`,
			errs: []string{"agent a: temperature cannot be set with thinking"}},
		{name: "thinking on openai", agent: `{provider: openai, model: m, thinking: 2048}`,
			errs: []string{"agent a: thinking is for the anthropic provider"}},
		{name: "stream not a bool", agent: `{provider: openai, model: m, stream: yes please}`,
			errs: []string{"agent a: stream"}},
		{name: "batch", agent: `{provider: anthropic, model: m, batch: true}`,
			check: func(a *Agent) bool { return a.Batch }},
		{name: "batch on a provider without a batch API", agent: `{provider: script, responses: [hi], batch: true}`,
			errs: []string{"agent a: batch is for the openai and anthropic providers"}},
		{name: "a negative cache price", agent: `{provider: openai, model: m, price: {input: 1, output: 1, cache_write: -1}}`,
			errs: []string{"agent a: price.cache_write must not be negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("p.yaml", []byte("version: 1\nagents:\n  a: "+tc.agent+"\nsteps: [{label: s, type: command, run: x}]\n"))
			if len(tc.errs) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if !tc.check(p.Agent("a")) {
					t.Errorf("agent = %+v", p.Agent("a"))
				}
				return
			}
			for _, want := range tc.errs {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v, want %q", err, want)
				}
			}
		})
	}
}

func TestAgentOverrideStream(t *testing.T) {
	o := AgentOverrides{}
	if err := o.Set("a.stream=maybe"); err == nil || !strings.Contains(err.Error(), "want true or false") {
		t.Errorf("err = %v", err)
	}
	if err := o.Set("a.stream=true"); err != nil {
		t.Fatal(err)
	}
	p, err := Parse("p.yaml", []byte("version: 1\nagents:\n  a: {provider: anthropic, model: m}\nsteps: [{label: s, type: command, run: x}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Override(o); err != nil || !p.Agent("a").Stream {
		t.Errorf("override: %v, stream %v", err, p.Agent("a").Stream)
	}
}

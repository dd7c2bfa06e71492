package temporal

import (
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/plans"
)

// A plan Temporal cannot run as it says is refused before it starts,
// naming the step and the way out.
func TestUnsupportedRefuses(t *testing.T) {
	const head = "version: 1\nagents:\n  a: {provider: openai, model: gpt-4o}\n  b: {provider: openai, model: gpt-4o, batch: true}\n"
	cases := []struct {
		name, steps, want string
		agents            string // more agents than a
	}{
		{"agent batch", "  - {label: ask, type: llm, agent: b, prompt: hi, for_each: '${{ [1, 2] }}'}\n", "step ask: batch: true", ""},
		{"agent batch, step false", "  - {label: ask, type: llm, agent: b, prompt: hi, for_each: '${{ [1, 2] }}', batch: false}\n", "", ""},
		{"agent batch, no for_each", "  - {label: ask, type: llm, agent: b, prompt: hi}\n", "", ""},
		{"batch", "  - {label: ask, type: llm, agent: a, prompt: hi, for_each: '${{ [1, 2] }}', batch: true}\n", "step ask: batch: true", ""},
		{"batch false", "  - {label: ask, type: llm, agent: a, prompt: hi, for_each: '${{ [1, 2] }}', batch: false}\n", "", ""},
		{"no batch", "  - {label: ask, type: llm, agent: a, prompt: hi}\n", "", ""},
		{"spawns", "  - {label: ask, type: llm, agent: root, tools: [spawn], prompt: hi}\n",
			"agent root: spawns: (sub-agents its llm steps start with tools: [spawn]) is not supported on Temporal",
			"  root: {provider: openai, model: gpt-4o, spawns: [a]}\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := plans.Parse("plan.yaml", []byte(head+c.agents+"steps:\n"+c.steps))
			if err != nil {
				t.Fatal(err)
			}
			err = unsupported(p, nil)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "without --engine temporal")):
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

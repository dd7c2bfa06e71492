package plans

import (
	"strings"
	"testing"
	"time"
)

func TestParseReportsProblemsWithPositions(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"yaml syntax", "version: 1\nsteps:\n  - label: a\n   type: command\n", []string{"p.yaml:4:4: the indentation does not fit the lines above"}},
		{"empty", "", []string{"p.yaml:1:1: the plan is empty"}},
		{"only comments", "# nothing yet\n", []string{"p.yaml:1:1: the plan is empty"}},
		{"not a mapping", "- a\n- b\n", []string{"p.yaml:1:1: the plan must be a mapping, got a list"}},
		{"missing version and steps", "name: x\n", []string{`p.yaml:1:1: missing required field "version"`, `missing required field "steps"`}},
		{"unsupported version", "version: 2\nsteps: [{label: a, type: command}]\n", []string{"p.yaml:1:10: version 2 is not supported"}},
		{"duplicate key", "version: 1\nversion: 1\nsteps: [{label: a, type: x}]\n", []string{`p.yaml:2:1: the plan: "version" is given twice`}},
		{"unknown top-level field", "version: 1\nstep: []\nsteps: [{label: a, type: x}]\n", []string{`p.yaml:2:1: unknown field "step" in the plan (did you mean "steps"?)`}},
		{"empty label", "version: 1\nsteps: [{label: '', type: x}]\n", []string{"p.yaml:2:17: label is empty: name the step"}},
		{"max_backoff under backoff", "version: 1\nsteps: [{label: a, type: x, retry: {max: 2, backoff: 5m, max_backoff: 1s}}]\n",
			[]string{"p.yaml:2:71: retry.max_backoff 1s is shorter than retry.backoff 5m0s"}},
		{"bad var name", "version: 1\nvars: {my-var: 1}\nsteps: [{label: a, type: x}]\n", []string{`p.yaml:2:8: var name "my-var" must be letters`}},
		{"limits", "version: 1\nlimits: {max_steps: 0, timeout: soon, max_tokns: 5}\nsteps: [{label: a, type: x}]\n",
			[]string{"p.yaml:2:21: limits.max_steps must be at least 1", `p.yaml:2:33: limits.timeout: "soon" is not a duration`, `p.yaml:2:39: unknown field "max_tokns" in limits (did you mean "max_tokens"?)`}},
		{"two documents", "version: 1\nsteps: [{label: a, type: x}]\n---\nname: other\n", []string{"p.yaml:3:1: the file holds 2 YAML documents (a second one starts here); a plan is one"}},
		{"three documents", "---\nversion: 1\nsteps: [{label: a, type: x}]\n---\na: 1\n---\nb: 2\n", []string{"p.yaml:4:1: the file holds 3 YAML documents"}},
		{"broken second document", "version: 1\nsteps: [{label: a, type: x}]\n---\nname: [unclosed\n", []string{"p.yaml:3:1: the file holds more than one YAML document (a second one starts here, and is not valid YAML)"}},
		{"agents", `version: 1
agents:
  a: {provider: opnai, model: m}
  b: {provider: openai}
  c: {provider: script}
  d: {provider: anthropic, model: m, temperature: 3, responses: [x]}
steps: [{label: s, type: x}]
`, []string{`p.yaml:3:17: agent a: unknown provider "opnai" (one of openai, anthropic, script, a2a) (did you mean "openai"?)`,
			`p.yaml:4:6: agent b is missing required field "model"`,
			`p.yaml:5:6: agent c: the script provider needs responses`,
			`p.yaml:6:51: agent d: temperature 3 is outside 0..2`,
			`p.yaml:6:65: agent d: responses are for the script provider only`}},
		{"cost and fallbacks", `version: 1
limits: {max_cost_usd: 0}
agents:
  a: {provider: openai, model: m, fallback: [a, bb, c], price: {input: -1, outptu: 2}}
  b: {provider: script, responses: [x], fallback: c}
  c: {provider: script, responses: [x], price: {input: 1, output: 2}, subscribe: [news]}
steps: [{label: s, type: x}]
`, []string{"p.yaml:2:24: limits.max_cost_usd must be more than 0",
			`p.yaml:4:46: agent a: fallback: an agent cannot be its own fallback`,
			`p.yaml:4:49: agent a: fallback: no agent named "bb" in the plan's agents (did you mean "b"?)`,
			`p.yaml:4:72: agent a: price.input must not be negative`,
			`p.yaml:4:76: unknown field "outptu" in agent a: price (did you mean "output"?)`,
			`p.yaml:4:64: agent a: price needs both input and output`}},
		{"budgets", `version: 1
budgets:
  on_exceed: maybe
  limits:
    - {agent: a, model: m, period: week, max_cost_usd: 0}
    - {plan: p, max_tokens: 10, maxx: 1}
steps: [{label: s, type: x}]
`, []string{`p.yaml:3:14: budgets.on_exceed: "maybe" is not fail or ask`,
			`p.yaml:5:36: budgets.limits[0].period: "week" is not day or month (calendar days and months in UTC)`,
			"p.yaml:5:56: budgets.limits[0].max_cost_usd must be more than 0",
			"p.yaml:5:7: budgets.limits[0] needs exactly one of agent, model or plan: what it limits",
			`p.yaml:6:33: unknown field "maxx" in budgets.limits[1]`,
			"p.yaml:6:7: budgets.limits[1] needs a period: day or month"}},
		{"openai fields", `version: 1
agents:
  a: {provider: openai, model: m, api: response, reasoning_effort: hihg, stream: yes please}
  b: {provider: anthropic, model: m, api: chat, prompt_cache_key: k, stream: true}
steps: [{label: s, type: x}]
`, []string{`p.yaml:3:40: agent a: unknown api "response" (responses or chat) (did you mean "responses"?)`,
			`p.yaml:3:68: agent a: unknown reasoning_effort "hihg" (one of none, minimal, low, medium, high, xhigh) (did you mean "high"?)`,
			`p.yaml:3:82: agent a: stream`,
			`p.yaml:4:43: agent b: api is for the openai provider only`,
			`p.yaml:4:67: agent b: prompt_cache_key is for the openai provider only`}},
		{"steps", `version: 1
steps:
  - type: command
  - {label: a, parallel: [{label: b, type: x}], type: command}
  - {label: c, type: x, max_concurrency: 2}
  - {label: d, type: x, retry: {backoff: 1s}}
  - {label: end, type: x}
  - {label: e, type: x, retry: {max: 2, untill: "true"}}
  - {label: f, type: x, write: {key: k, ttl: 1}}
  - {label: g, parallel: []}
`, []string{`p.yaml:3:5: step is missing required field "label"`,
			`p.yaml:4:16: a step has either type or parallel, not both`,
			`p.yaml:5:42: max_concurrency applies only to a parallel group or a for_each step`,
			`p.yaml:6:32: retry is missing required field "max"`,
			`p.yaml:7:13: label "end" is reserved for goto`,
			`p.yaml:8:41: unknown field "untill" in retry (did you mean "until"?)`,
			`p.yaml:9:46: write.ttl: "1" is not a duration`,
			`p.yaml:10:26: g.parallel is empty`}},
		{"approve", `version: 1
agents:
  a: {provider: script, responses: [x], approve: {tools: ["[bad"], who: [ann]}}
  b: {provider: script, responses: [x], approve: []}
steps: [{label: s, type: x}]
`, []string{`p.yaml:3:50: agent a: approve: bad pattern "[bad": syntax error in pattern`,
			`p.yaml:3:68: unknown field "who" in agent a: approve`,
			`p.yaml:4:50: agent b: approve names no tool pattern`}},
		{"notify", `version: 1
notify:
  - {url: "ftp://x", format: teams, on: [waited]}
  - {url: "http://x", url_env: HOOK}
  - {url_env: "bad name", link: {ttl: 1h}}
steps: [{label: s, type: x}]
`, []string{`p.yaml:3:11: notify: url "ftp://x" is not an http(s) URL`,
			`p.yaml:3:30: notify: format "teams" is not json or slack`,
			`p.yaml:3:41: notify: on: unknown event "waited" (waiting, failed, ended)`,
			`p.yaml:4:5: notify: give url or url_env (one of them)`,
			`p.yaml:5:15: notify: url_env "bad name" is not an environment variable name`,
			`p.yaml:5:33: notify: link needs base, the URL runner serve is reached at`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tt.src))
			if err == nil {
				t.Fatal("no error")
			}
			got := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
			if n := len(err.(Errors)); n != len(tt.want) && tt.name != "missing version and steps" {
				t.Errorf("%d problems, want %d:\n%s", n, len(tt.want), got)
			}
		})
	}
}

func TestParseValidPlan(t *testing.T) {
	p, err := Parse("p.yaml", []byte(`version: 1
name: n
vars: {rounds: 3, who: me, ratio: 0.5, on: true, list: [1, 2]}
env: {A: b}
limits: {timeout: 1m}
agents:
  bot: {provider: script, responses: {s: [one, two], t: three}}
steps:
  - {label: s, type: llm, retry: 2, if: "vars.on"}
  - label: g
    max_concurrency: 2
    parallel:
      - {label: c, type: command, write: {key: k}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Limits.MaxSteps != DefaultMaxSteps || p.Limits.Timeout != time.Minute {
		t.Errorf("limits %+v", p.Limits)
	}
	if d, _ := p.VarDefault("rounds"); d != 3 {
		t.Errorf("rounds default %T %v", d, d)
	}
	if s := p.Lookup("s"); s.Retry.Max != 2 || s.Retry.Backoff != time.Second || s.If.Src != "vars.on" {
		t.Errorf("step s %+v", s)
	}
	if c := p.Lookup("c"); c.Parent != p.Lookup("g") || c.Write.Section != "steps" || c.MaxVisits != DefaultMaxVisits {
		t.Errorf("step c %+v", c)
	}
	resp := p.Agent("bot").Responses
	if len(resp) != 3 || resp[0].Label != "s" || resp[2].Text != "three" {
		t.Errorf("responses %+v", resp)
	}
	if got := strings.Join(p.Labels(), ","); got != "s,g,c" {
		t.Errorf("labels %s", got)
	}
}

func TestSuggest(t *testing.T) {
	for _, tt := range []struct{ name, want string }{
		{"stpes", `"steps"`}, {"rn", `"run"`}, {"timeout", `"timeout"`}, {"zzzzzz", ""}, {"ab", ""},
	} {
		got := Suggest(tt.name, []string{"steps", "run", "timeout", "label"})
		if !strings.Contains(got, tt.want) || (tt.want == "" && got != "") {
			t.Errorf("Suggest(%q) = %q, want %s", tt.name, got, tt.want)
		}
	}
}

func TestOpenAIAgentFields(t *testing.T) {
	tests := []struct {
		name, agent string
		want        Agent
	}{
		{"defaults", "{provider: openai, model: m}", Agent{}},
		{"all set", "{provider: openai, model: gpt-5, api: responses, stream: true, reasoning_effort: low, prompt_cache_key: coder}",
			Agent{API: APIResponses, Stream: true, ReasoningEffort: "low", PromptCacheKey: "coder"}},
		{"chat, streamed", "{provider: openai, model: m, base_url: 'http://localhost:11434/v1', api: chat, stream: true}",
			Agent{API: APIChat, Stream: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("p.yaml", []byte("version: 1\nagents:\n  a: "+tc.agent+"\nsteps: [{label: s, type: x}]\n"))
			if err != nil {
				t.Fatal(err)
			}
			a := p.Agent("a")
			if a.API != tc.want.API || a.Stream != tc.want.Stream || a.ReasoningEffort != tc.want.ReasoningEffort || a.PromptCacheKey != tc.want.PromptCacheKey {
				t.Errorf("agent = %+v", a)
			}
		})
	}
}

func TestOverrideOpenAIFields(t *testing.T) {
	const src = "version: 1\nagents:\n  coder: {provider: script, model: m, responses: [x]}\nsteps: [{label: s, type: x}]\n"
	tests := []struct {
		name    string
		flags   []string
		want    Agent
		wantErr string
	}{
		{"responses, reasoning", []string{"coder.provider=openai", "coder.api=responses", "coder.reasoning_effort=low"},
			Agent{Provider: "openai", API: APIResponses, ReasoningEffort: "low"}, ""},
		{"chat, streamed", []string{"coder.provider=openai", "coder.api=chat", "coder.stream=true"},
			Agent{Provider: "openai", API: APIChat, Stream: true}, ""},
		{"unknown api", []string{"coder.provider=openai", "coder.api=completions"}, Agent{}, "unknown api (responses or chat)"},
		{"stream not a bool", []string{"coder.stream=yes"}, Agent{}, "want true or false"},
		{"effort misspelt", []string{"coder.provider=openai", "coder.reasoning_effort=hgh"}, Agent{}, `unknown effort (did you mean "high"?)`},
		{"api on a script agent", []string{"coder.api=chat"}, Agent{}, "for the openai provider only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("p.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			// A flag is refused as it is read (Set) or as it is applied
			// (Override): either way, before the run starts.
			o := AgentOverrides{}
			for _, f := range tc.flags {
				if err = o.Set(f); err != nil {
					break
				}
			}
			if err == nil {
				err = p.Override(o)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a := p.Agent("coder")
			if a.Provider != tc.want.Provider || a.API != tc.want.API || a.Stream != tc.want.Stream || a.ReasoningEffort != tc.want.ReasoningEffort {
				t.Errorf("agent = %+v", a)
			}
		})
	}
}

package steps

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// toolAnswers are the tool turns of the entries of label, in order.
func toolAnswers(b *board.Board, label string) []string {
	var out []string
	for _, e := range b.Query(board.Filter{Section: "llm", Label: label}) {
		if e.Role == "tool" {
			s, _ := e.Content.(string)
			out = append(out, s)
		}
	}
	return out
}

func TestSpawnAgent(t *testing.T) {
	const agentsSrc = `
agents:
  root:
    provider: script
    spawns: [worker, deep]
    responses:
      go:
        - tool_calls:
%s
        - done
  worker:
    provider: script
    responses:
      - tool_calls:
          - {name: board_write, args: {key: "out:a", value: 1}}
          - {name: board_write, args: {key: "other", value: 2}}
          - {name: board_read, args: {key: "secret"}}
      - worker done
  deep:
    provider: script
    spawns: [worker]
    responses:
      - tool_calls: [{name: spawn_agent, args: {agent: worker, task: deeper, write_keys: ["out:*"]}}]
      - deep done
  other:
    provider: script
    responses: [x]
`
	spawn := func(agent string, write ...string) string {
		w, _ := json.Marshal(write)
		return `            - {name: spawn_agent, args: {agent: ` + agent + `, task: "do it", write_keys: ` + string(w) + `}}`
	}
	tests := []struct {
		name    string
		calls   []string
		limits  string
		want    []string // substrings of the root's tool answers, in order
		wantKey string   // a key the sub-agents wrote
		calls0  int      // model calls counted in the step's usage (root's 2 included)
		// visits are the step records after go's own, in the order they
		// finished: LABEL<PARENT AGENT STATUS calls=N (the sub-agents').
		visits    []string
		maxSteps  int
		wantSteps int // records on the board, the step's own included
	}{
		{"a sub-agent's answer and the keys it wrote", []string{spawn("worker", "out:*")}, "",
			[]string{`"answer":"worker done"`, `"wrote":{"out:a":1}`}, "out:a", 4,
			[]string{"go/spawn-1-worker<go worker succeeded calls=2"}, 0, 2},
		{"a write outside its keys is refused to the sub-agent", []string{spawn("worker", "out:*")}, "",
			[]string{`"label":"go/spawn-1-worker"`}, "out:a", 4, nil, 0, 2},
		{"an agent it may not spawn", []string{spawn("other")}, "",
			[]string{`error: agent root may not spawn "other" (it may spawn: worker, deep)`}, "", 2, nil, 0, 1},
		{"per call", []string{spawn("worker", "out:*"), spawn("worker", "out:*")}, "{per_call: 1}",
			[]string{`"answer":"worker done"`, `error: at most 1 spawn_agent calls are started per turn`}, "out:a", 4, nil, 0, 2},
		{"per run", []string{spawn("worker", "out:*"), spawn("worker", "out:*")}, "{per_run: 1}",
			[]string{`"answer":"worker done"`, `the run has started its 1 sub-agents`}, "out:a", 4, nil, 0, 2},
		{"max_steps counts a sub-agent's visit and refuses the next", []string{spawn("worker", "out:*"), spawn("worker", "out:*")}, "",
			[]string{`"answer":"worker done"`, `error: limits.max_steps 2 reached: no visit is left for go/spawn-2-worker`}, "out:a", 4,
			[]string{"go/spawn-1-worker<go worker succeeded calls=2"}, 2, 2},
		{"depth 1: a sub-agent does not spawn", []string{spawn("deep", "out:*")}, "{depth: 1}",
			[]string{`unknown tool "spawn_agent"`}, "", 0,
			[]string{"go/spawn-1-deep<go deep succeeded calls=2"}, 0, 2},
		{"depth 2: a sub-agent spawns", []string{spawn("deep", "out:*")}, "{depth: 2}",
			[]string{`"answer":"deep done"`, `"wrote":{}`}, "out:a", 6,
			[]string{"go/spawn-1-deep/spawn-2-worker<go/spawn-1-deep worker succeeded calls=2", "go/spawn-1-deep<go deep succeeded calls=4"}, 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := ""
			if tt.limits != "" {
				lim = "\n    spawn: " + tt.limits
			}
			src := "version: 1\n"
			if tt.maxSteps > 0 {
				src += fmt.Sprintf("limits: {max_steps: %d}\n", tt.maxSteps)
			}
			src += strings.Replace(agentsSrc, "%s", strings.Join(tt.calls, "\n"), 1) + `
steps:
  - label: go
    type: llm
    agent: root
    tools: [spawn]` + lim + `
    prompt: work
`
			b, err := llmRunPlan(t, src, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(toolAnswers(b, "go"), "\n")
			if tt.name == "depth 1: a sub-agent does not spawn" {
				got = strings.Join(toolAnswers(b, "go/spawn-1-deep"), "\n")
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("tool answers lack %s:\n%s", w, got)
				}
			}
			if tt.name == "a write outside its keys is refused to the sub-agent" {
				sub := strings.Join(toolAnswers(b, "go/spawn-1-worker"), "\n")
				for _, w := range []string{`error: agent worker may not write key "other" (its spawn allows out:*)`,
					`error: sub-agent worker was given no keys to read; key "secret" is outside its scope`} {
					if !strings.Contains(sub, w) {
						t.Errorf("the sub-agent's answers lack %s:\n%s", w, sub)
					}
				}
				if _, ok := b.Get("other"); ok {
					t.Error("the write outside the sub-agent's keys was made")
				}
			}
			if tt.wantKey != "" {
				if _, ok := b.Get(tt.wantKey); !ok {
					t.Errorf("no %s on the board", tt.wantKey)
				}
			}
			steps := b.Steps()
			if len(steps) != tt.wantSteps {
				t.Errorf("%d step records, want %d", len(steps), tt.wantSteps)
			}
			var visits []string
			for _, s := range steps {
				if !s.Spawned() {
					continue
				}
				var res LLMResult
				if err := json.Unmarshal(s.Result, &res); err != nil {
					t.Fatal(err)
				}
				if s.Visit != 1 || s.Type != "llm" || s.FinishedAt.Before(s.StartedAt) || res.Agent != s.Agent {
					t.Errorf("sub-agent visit %+v, result %+v", s, res)
				}
				visits = append(visits, fmt.Sprintf("%s<%s %s %s calls=%d", s.Label, s.Parent, s.Agent, s.Status, res.Calls))
			}
			if tt.visits != nil && !slices.Equal(visits, tt.visits) {
				t.Errorf("sub-agents' visits:\n%s\nwant:\n%s", strings.Join(visits, "\n"), strings.Join(tt.visits, "\n"))
			}
			if steps[len(steps)-1].Label != "go" {
				t.Errorf("the step's own record is not the last: %s", steps[len(steps)-1].Label)
			}
			if tt.calls0 > 0 {
				res := llmSaved(t, b, "go")
				if n, _ := res["calls"].(float64); int(n) != tt.calls0 {
					t.Errorf("calls %v, want %d (the sub-agents' counted): %v", res["calls"], tt.calls0, res)
				}
			}
		})
	}
}

func TestSpawnChecks(t *testing.T) {
	tests := []struct{ src, want string }{
		{`
agents:
  root: {provider: script, responses: [x]}
steps:
  - {label: a, type: llm, agent: root, tools: [spawn], prompt: p}`, "agent root has no spawns"},
		{`
agents:
  root: {provider: script, spawns: [ghost], responses: [x]}
steps:
  - {label: a, type: llm, agent: root, tools: [spawn], prompt: p}`, `spawns: no agent named "ghost"`},
		{`
agents:
  root: {provider: script, spawns: [root], responses: [x]}
steps:
  - {label: a, type: llm, agent: root, tools: [board], spawn: {depth: 1}, prompt: p}`, "spawn is for tools: [spawn]"},
	}
	for _, tt := range tests {
		if got := llmCompileErr(t, "version: 1\n"+tt.src+"\n"); !strings.Contains(got, tt.want) {
			t.Errorf("got %s, want %s", got, tt.want)
		}
	}
}

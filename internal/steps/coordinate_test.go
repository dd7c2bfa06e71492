package steps

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
)

func TestCoordinate(t *testing.T) {
	tests := []struct {
		name, agents, step string
		wantOutput         string
		wantOrder          string // agents in speaking order
		wantSkipped        int
		wantDecidedBy      string
		wantErr            string
	}{
		{
			name: "round robin, last contribution decides",
			agents: `
  alice: {provider: script, responses: {team: [a1, a2]}}
  bob: {provider: script, responses: {team: [b1]}}`,
			step:       `{label: team, type: coordinate, agents: [alice, bob], max_rounds: 3, prompt: "Plan the release"}`,
			wantOutput: "a2", wantOrder: "alice bob alice", wantDecidedBy: "alice",
		},
		{
			name: "round robin, the last answer-kind contribution decides",
			agents: `
  alice: {provider: script, responses: {team: ["ANSWER: ship on Friday", a2]}}
  bob: {provider: script, responses: {team: [b1]}}`,
			step:       `{label: team, type: coordinate, agents: [alice, bob], max_rounds: 3, prompt: "Plan the release"}`,
			wantOutput: "ship on Friday", wantOrder: "alice bob alice", wantDecidedBy: "alice",
		},
		{
			// The coordinator's acceptance plan: fenced JSON, an unknown
			// agent, prose, then terminate; the decider answers.
			name: "coordinator JSON: fenced, unknown agent, prose, terminate",
			agents: `
  alice: {provider: script, responses: {team: [a1]}}
  bob: {provider: script, responses: {team: [b1]}}
  boss:
    provider: script
    responses:
      team:
        - "Let me think.\n` + "```json" + `\n{\"terminate\": false, \"next_agent\": \"bob\", \"instruction\": \"List the risks of shipping alice's plan\"}\n` + "```" + `"
        - '{"terminate": false, "next_agent": "carol", "instruction": "Review"}'
        - "I believe Alice should go next, she knows the release."
        - 'Alice then: {"terminate": false, "next_agent": "alice", "instruction": null}'
        - '{"terminate": true, "next_agent": null, "instruction": null}'
  judge: {provider: script, responses: {team: [final answer]}}`,
			step:       `{label: team, type: coordinate, agents: [alice, bob], coordinator: boss, decider: judge, prompt: "Plan"}`,
			wantOutput: "final answer", wantOrder: "bob alice", wantSkipped: 2, wantDecidedBy: "judge",
		},
		{
			name: "plain names and DONE are tolerated",
			agents: `
  alice: {provider: script, responses: {team: [a1]}}
  bob: {provider: script, responses: {team: [b1, b2]}}
  boss: {provider: script, responses: {team: ["bob", "**Alice**", "Bob!", "done"]}}`,
			step:       `{label: team, type: coordinate, agents: [alice, bob], coordinator: boss, prompt: "Plan"}`,
			wantOutput: "b2", wantOrder: "bob alice bob", wantDecidedBy: "bob",
		},
		{
			name: "a coordinator that never decides skips every round, then the step fails saying so",
			agents: `
  alice: {provider: script, responses: [a1]}
  boss: {provider: script, responses: [everyone, "alice or DONE", '{"next_agent": 3}']}`,
			step:    `{label: team, type: coordinate, agents: [alice], coordinator: boss, max_rounds: 3, prompt: "Plan"}`,
			wantErr: "no agent contributed in 3 rounds (3 skipped",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := llmRunPlan(t, "version: 1\nagents:"+tt.agents+"\nsteps:\n  - "+tt.step+"\n", nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res := llmSaved(t, b, "team")
			if res["output"] != tt.wantOutput {
				t.Errorf("output %v, want %q", res["output"], tt.wantOutput)
			}
			var order []string
			for _, c := range res["contributions"].([]any) {
				order = append(order, c.(map[string]any)["agent"].(string))
			}
			if strings.Join(order, " ") != tt.wantOrder {
				t.Errorf("speakers %v, want %s", order, tt.wantOrder)
			}
			if res["skipped"] != float64(tt.wantSkipped) || res["decided_by"] != tt.wantDecidedBy {
				t.Errorf("skipped %v decided_by %v, want %d %s", res["skipped"], res["decided_by"], tt.wantSkipped, tt.wantDecidedBy)
			}
			// Every round left its decision on the board, and every
			// skipped round an error entry.
			decisions, errs := 0, 0
			for _, e := range b.Entries() {
				if e.Section != "contributions" {
					continue
				}
				if e.Label != "team" {
					t.Errorf("contribution without provenance: %+v", e)
				}
				switch e.Meta["kind"] {
				case kindDecision:
					decisions++
				case kindError:
					errs++
				}
			}
			if decisions != int(res["rounds"].(float64)) || errs != tt.wantSkipped {
				t.Errorf("%d decisions and %d errors on the board for %v rounds", decisions, errs, res["rounds"])
			}
		})
	}
}

// TestCoordinatorAcceptance checks, beyond the outcome, what a coordinator
// owes each round: the skipped rounds say why on the board, the instruction
// reaches the agent with the board's view and its private notes, and the
// coordinator sees the skipped rounds.
func TestCoordinatorAcceptance(t *testing.T) {
	src := `version: 1
agents:
  alice: {provider: script, responses: {team: [a1]}}
  bob: {provider: script, system: "Finds risks.", responses: {team: ["ANSWER: risk list"]}}
  boss:
    provider: script
    responses:
      team:
        - "` + "```json" + `\n{\"terminate\": false, \"next_agent\": \"bob\", \"instruction\": \"List the risks of shipping alice's plan\"}\n` + "```" + `"
        - '{"terminate": false, "next_agent": "carol", "instruction": "Review"}'
        - "I believe Alice should go next."
        - '{"terminate": true, "next_agent": null, "instruction": null}'
steps:
  - {label: note, type: board, op: write, key: notes/bob/todo, value: "check the migration"}
  - {label: other, type: board, op: write, key: notes/alice/secret, value: "alice only"}
  - {label: team, type: coordinate, agents: [alice, bob], coordinator: boss, prompt: "Plan the release"}
`
	b, err := llmRunPlan(t, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := llmSaved(t, b, "team")
	if res["output"] != "risk list" || res["decided_by"] != "bob" {
		t.Errorf("output %v by %v, want bob's answer", res["output"], res["decided_by"])
	}
	var errs []string
	for _, e := range b.Query(board.Filter{Section: "contributions", Role: "system"}) {
		errs = append(errs, e.Content.(string))
	}
	want := []string{`round 2 skipped: the coordinator picked unknown agent "carol" (agents: alice, bob)`,
		`round 3 skipped: the coordinator's answer has no JSON decision: "I believe Alice should go next."`}
	if strings.Join(errs, "\n") != strings.Join(want, "\n") {
		t.Errorf("error entries:\n%s\nwant:\n%s", strings.Join(errs, "\n"), strings.Join(want, "\n"))
	}
	bobReq := request(t, b, "bob", 1)
	for _, s := range []string{"You are bob.", "Instruction: List the risks of shipping alice's plan",
		"[problem] user: Plan the release", "=== Your private notes ===\ntodo: check the migration"} {
		if !strings.Contains(bobReq, s) {
			t.Errorf("bob's request lacks %q:\n%s", s, bobReq)
		}
	}
	if strings.Contains(bobReq, "alice only") {
		t.Errorf("bob saw alice's private note:\n%s", bobReq)
	}
	last := request(t, b, "boss", 4)
	for _, s := range []string{"[error] runner: round 2 skipped", "[error] runner: round 3 skipped", "[answer] bob: risk list",
		`[decision] boss: {"round":1,"by":"boss","terminate":false,"next_agent":"bob"`} {
		if !strings.Contains(last, s) {
			t.Errorf("the coordinator's last request lacks %q:\n%s", s, last)
		}
	}
}

// request returns the user message of the n-th recorded call made to agent
// (from 1), as the model received it.
func request(t *testing.T, b *board.Board, agent string, n int) string {
	t.Helper()
	for _, r := range b.Recordings() {
		if r.Agent != agent {
			continue
		}
		if n--; n > 0 {
			continue
		}
		var req agents.Request
		if err := json.Unmarshal(r.Request, &req); err != nil {
			t.Fatal(err)
		}
		return req.Messages[len(req.Messages)-1].Content
	}
	t.Fatalf("agent %s made fewer calls", agent)
	return ""
}

func TestCoordinateBoundedView(t *testing.T) {
	long := strings.Repeat("word ", 400) // 2000 bytes per contribution
	var answers []string
	for i := 0; i < 12; i++ {
		answers = append(answers, fmt.Sprintf("%q", fmt.Sprintf("turn %d %s", i+1, long)))
	}
	src := fmt.Sprintf(`version: 1
agents:
  alice: {provider: script, responses: [%s]}
steps:
  - {label: team, type: coordinate, agents: [alice], max_rounds: 12, view: {entries: 8, max_bytes: 3000}, prompt: "Write"}
`, strings.Join(answers, ", "))
	b, err := llmRunPlan(t, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	last := request(t, b, "alice", 12)
	view := last[strings.Index(last, "Blackboard state:"):strings.Index(last, "Instruction:")]
	if len(view) > 3300 {
		t.Errorf("the view is %d bytes, over its 3000-byte bound:\n%s", len(view), view)
	}
	if !strings.Contains(view, "earlier entries left out to keep this view within 8 entries and 3000 bytes") {
		t.Errorf("the view does not say what it left out:\n%s", view)
	}
	if !strings.Contains(view, "turn 11 ") || strings.Contains(view, "turn 1 ") || !strings.Contains(view, "bytes cut]") {
		t.Errorf("the view should keep the newest entries, clipped:\n%s", view)
	}
}

func TestCoordinateBudgetBeforeEachRound(t *testing.T) {
	f := newLLMOpenAIFake(t, "one", "two", "three")
	src := `version: 1
limits: {max_tokens: 500}
agents:
  coder: {provider: openai, model: gpt-4o-mini, max_tokens: 20, base_url: "` + f.srv.URL + `/v1"}
steps:
  - {label: team, type: coordinate, agents: [coder], max_rounds: 3, prompt: "Write"}
`
	// Each call uses 120 tokens. Round 2's call fits (120 used + its
	// most); round 3's, whose prompt holds a longer board, could use 375
	// more (240 + 375 > 500): it is not made.
	b, err := llmRunPlan(t, src, llmAgents(t, src, agents.Options{}))
	var be *agents.BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("err = %v, want the budget error", err)
	}
	if !strings.Contains(err.Error(), "round 3, agent coder: limits.max_tokens 500: the next call") {
		t.Errorf("err = %v", err)
	}
	if len(f.bodies) != 2 {
		t.Errorf("%d calls reached the server, want 2", len(f.bodies))
	}
	if b.Run().Status != "failed" {
		t.Errorf("run status %s", b.Run().Status)
	}
}

func TestVolunteerMode(t *testing.T) {
	src := `version: 1
agents:
  alice:
    provider: script
    responses:
      team:
        - '{"volunteer": true, "confidence": 0.4, "reason": "I drafted plans before"}'
        - "` + "```json" + `\n{\"volunteer\": false, \"reason\": \"bob covered it\"}\n` + "```" + `"
  bob:
    provider: script
    responses:
      team:
        - 'Sure. {"volunteer": true, "confidence": 0.9, "reason": "I know the risks"}'
        - "ANSWER: the risks are X and Y"
        - "I am not sure"
steps:
  - {label: team, type: coordinate, mode: volunteer, agents: [alice, bob], max_rounds: 5, prompt: "Assess the release"}
`
	b, err := llmRunPlan(t, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := llmSaved(t, b, "team")
	if res["output"] != "the risks are X and Y" || res["rounds"] != float64(2) {
		t.Fatalf("output %v after %v rounds", res["output"], res["rounds"])
	}
	ds := res["decisions"].([]any)
	first := ds[0].(map[string]any)
	if first["next_agent"] != "bob" || len(first["bids"].([]any)) != 2 || !strings.Contains(fmt.Sprint(first["instruction"]), "I know the risks") {
		t.Errorf("round 1: %v", first)
	}
	second := ds[1].(map[string]any)
	if second["terminate"] != true || second["next_agent"] != nil {
		t.Errorf("round 2 should end the rounds, no one volunteering: %v", second)
	}
	bids := second["bids"].([]any)
	if r := bids[1].(map[string]any)["reason"]; !strings.Contains(fmt.Sprint(r), "unreadable bid") {
		t.Errorf("bob's unreadable bid: %v", r)
	}
	if req := request(t, b, "alice", 1); !strings.Contains(req, "Assess the release") || !strings.Contains(req, `{"volunteer": <bool>`) {
		t.Errorf("alice's bid request:\n%s", req)
	}
}

func TestCoordinateChecksAgents(t *testing.T) {
	msg := llmCompileErr(t, `version: 1
agents:
  alice: {provider: script, responses: [x]}
steps:
  - {label: team, type: coordinate, agents: [alice, alicee], coordinator: boss, prompt: p}
  - {label: v, type: coordinate, agents: [alice], coordinator: alice, mode: volunteer, prompt: p, view: {entries: 0}}
`)
	for _, want := range []string{`plan.yaml:5:53: agents: no agent named "alicee" in the plan's agents (did you mean "alice"?)`,
		`plan.yaml:5:75: coordinator: no agent named "boss"`,
		`plan.yaml:6:77: mode: volunteer has no coordinator; drop coordinator or the mode`,
		`view.entries must be at least 1`} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
}

func TestParseDecision(t *testing.T) {
	names := []string{"alice", "bob"}
	tests := []struct{ answer, want string }{
		{`{"terminate": true}`, "terminate"},
		{"```\n{\"terminate\": false, \"next_agent\": \"bob\", \"instruction\": \"go\"}\n```", "bob: go"},
		{`I pick {"next_agent": "alice"} because`, "alice: "},
		{`{"a": 1} then {"terminate": false, "next_agent": "bob"}`, "bob: "},
		{`{"terminate": "yes"}`, "error: terminate must be true or false"},
		{`{"terminate": false, "next_agent": null}`, "error: the coordinator neither terminated nor named a next_agent"},
		{`{"terminate": false, "next_agent": "Bob"}`, `error: the coordinator picked unknown agent "Bob"`},
		{`{"terminate": false, "next_agent": "bob", "instruction": 7}`, "error: instruction must be a string or null"},
		{"DONE.", "terminate"},
		{"alice", "alice: "},
		{"alice and bob", "error: the coordinator's answer has no JSON decision"},
		{"", "error: the coordinator's answer has no JSON decision"},
	}
	for _, tt := range tests {
		d := parseDecision(tt.answer, names)
		got := ""
		switch {
		case d.Error != "":
			got = "error: " + d.Error
		case d.Terminate:
			got = "terminate"
		default:
			got = *d.NextAgent + ": "
			if d.Instruction != nil {
				got += *d.Instruction
			}
		}
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("parseDecision(%q) = %q, want %q", tt.answer, got, tt.want)
		}
	}
}

// TestCoordinatorInstructions: the plan's coordinator_instructions and
// decider_instructions replace the built-in ones in the requests the
// models receive (seed 002), with the agents, the answer format and the
// board still there, so the decision is read as before.
func TestCoordinatorInstructions(t *testing.T) {
	src := `version: 1
vars: {product: billing}
agents:
  alice: {provider: script, system: "Writes plans.", responses: {team: [a1]}}
  bob: {provider: script, system: "Finds risks.", responses: {team: [b1]}}
  boss:
    provider: script
    responses:
      team:
        - '{"terminate": false, "next_agent": "bob", "instruction": "risks"}'
        - '{"terminate": true, "next_agent": null, "instruction": null}'
  judge: {provider: script, responses: {team: [final]}}
steps:
  - label: team
    type: coordinate
    agents: [alice, bob]
    coordinator: boss
    decider: judge
    prompt: Plan the release
    coordinator_instructions: |
      You chair the ${{ vars.product }} review. Pick whoever is missing.
      Team:
      {agents}
    decider_instructions: Summarise as three bullet points for the ${{ vars.product }} team.
`
	b, err := llmRunPlan(t, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := llmSaved(t, b, "team"); res["output"] != "final" {
		t.Errorf("output %v", res["output"])
	}
	coord := request(t, b, "boss", 1)
	for _, s := range []string{"You chair the billing review. Pick whoever is missing.\nTeam:\n  - alice: Writes plans.\n  - bob: Finds risks.",
		`Output JSON exactly:` + "\n" + `{"terminate": <bool>`, "Round 1 of at most 6.", "[problem] user: Plan the release"} {
		if !strings.Contains(coord, s) {
			t.Errorf("the coordinator's request lacks %q:\n%s", s, coord)
		}
	}
	if strings.Contains(coord, "You coordinate a team") {
		t.Errorf("the built-in instructions are still there:\n%s", coord)
	}
	judge := request(t, b, "judge", 1)
	if !strings.HasPrefix(judge, "Summarise as three bullet points for the billing team.\n\nFull blackboard state:\n") ||
		!strings.Contains(judge, "[contribution] bob: b1") {
		t.Errorf("the decider's request:\n%s", judge)
	}
	if strings.Contains(judge, "You synthesize") {
		t.Errorf("the built-in decider instructions are still there:\n%s", judge)
	}

	// Without {agents}, the list is added after the instructions.
	b, err = llmRunPlan(t, strings.Replace(src, "      Team:\n      {agents}\n", "", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if coord := request(t, b, "boss", 1); !strings.Contains(coord, "Pick whoever is missing.\nAvailable agents:\n  - alice: Writes plans.") {
		t.Errorf("the coordinator's request without {agents}:\n%s", coord)
	}
}

func TestCoordinatorInstructionsNeedTheirAgent(t *testing.T) {
	msg := llmCompileErr(t, `version: 1
agents:
  alice: {provider: script, responses: [x]}
steps:
  - {label: team, type: coordinate, agents: [alice], prompt: p, coordinator_instructions: "Pick"}
  - {label: t2, type: coordinate, agents: [alice], prompt: p, decider_instructions: "Sum up"}
`)
	for _, want := range []string{`plan.yaml:5:91: coordinator_instructions needs a coordinator agent (mode round_robin has none)`,
		`plan.yaml:6:85: decider_instructions needs a decider agent`} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
}

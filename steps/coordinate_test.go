package steps

import (
	"strings"
	"testing"
)

func TestCoordinate(t *testing.T) {
	tests := []struct {
		name, agents, step string
		wantOutput         string
		wantOrder          string // agents in speaking order
		wantErr            string
	}{
		{
			name: "round robin, last answer decides",
			agents: `
  alice: {provider: script, responses: {team: [a1, a2]}}
  bob: {provider: script, responses: {team: [b1]}}`,
			step:       `{label: team, type: coordinate, agents: [alice, bob], max_rounds: 3, prompt: "Plan the release"}`,
			wantOutput: "a2", wantOrder: "alice bob alice",
		},
		{
			name: "coordinator picks and stops, decider answers",
			agents: `
  alice: {provider: script, responses: {team: [a1]}}
  bob: {provider: script, responses: {team: [b1, b2]}}
  boss: {provider: script, responses: {team: ["bob", "I think Alice.", "Bob!", "done"]}}
  judge: {provider: script, responses: {team: [final answer]}}`,
			step:       `{label: team, type: coordinate, agents: [alice, bob], coordinator: boss, decider: judge, prompt: "Plan"}`,
			wantOutput: "final answer", wantOrder: "bob alice bob",
		},
		{
			name: "coordinator that names nobody, twice",
			agents: `
  alice: {provider: script, responses: [a1]}
  boss: {provider: script, responses: [everyone, "alice or DONE"]}`,
			step:    `{label: team, type: coordinate, agents: [alice], coordinator: boss, prompt: "Plan"}`,
			wantErr: "coordinator boss did not name one of alice or DONE",
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
			for _, e := range b.Entries() {
				if e.Section == "contributions" && e.Label != "team" {
					t.Errorf("contribution without provenance: %+v", e)
				}
			}
		})
	}
}

func TestCoordinateChecksAgents(t *testing.T) {
	msg := llmCompileErr(t, `version: 1
agents:
  alice: {provider: script, responses: [x]}
steps:
  - {label: team, type: coordinate, agents: [alice, alicee], coordinator: boss, prompt: p}
`)
	for _, want := range []string{`plan.yaml:5:53: agents: no agent named "alicee" in the plan's agents (did you mean "alice"?)`,
		`plan.yaml:5:75: coordinator: no agent named "boss"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
}

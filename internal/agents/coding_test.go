package agents

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
)

// A resumed run counts what its coding_agent steps' model exchanges
// (recorded by their proxy) used and cost toward the run's limits, as it
// does the set's own calls: a limit the earlier part crossed stops the
// next charge.
func TestResumeRecountsCodingAgentSpend(t *testing.T) {
	// Two exchanges: 3000 in at $3/M, 100 out at $15/M: $0.0105, 3100 tokens.
	exchange := func(n, in, out int) board.Recording {
		resp, _ := json.Marshal(map[string]any{"n": n, "status": 200, "model": "claude-sonnet-4-5", "response": "event: message_start...",
			"usage": map[string]any{"input_tokens": in, "output_tokens": out}})
		return board.Recording{Label: "fix", Visit: 1, Kind: KindCodingAgent, Call: n, Agent: "claude",
			Request: json.RawMessage(`{"model":"claude-sonnet-4-5"}`), Response: resp}
	}
	outcome := board.Recording{Label: "fix", Visit: 1, Kind: KindCodingAgent, Agent: "claude", Request: json.RawMessage("null"),
		Response: json.RawMessage(`{"output":"done","result":{"usage":{"input_tokens":3000,"output_tokens":100,"cost_usd":0.0105}}}`)}
	for _, tc := range []struct {
		name      string
		limits    plans.Limits
		wantUSD   float64
		wantUsed  int
		wantLimit bool
	}{
		{name: "under the cost limit", limits: plans.Limits{MaxCostUSD: 0.02}},
		{name: "over the cost limit", limits: plans.Limits{MaxCostUSD: 0.01}, wantUSD: 0.0105, wantLimit: true},
		{name: "over the token limit", limits: plans.Limits{MaxTokens: 3000}, wantUsed: 3100, wantLimit: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := onePlan(&plans.Agent{Name: "claude", Provider: "anthropic", Model: "claude-sonnet-4-5",
				Price: &plans.Price{Input: 3, Output: 15}})
			plan.Limits = tc.limits
			h := newHarness(t, plan, nil)
			for _, r := range []board.Recording{exchange(1, 1000, 40), exchange(2, 2000, 60), outcome} {
				if err := h.board.AddRecording(r); err != nil {
					t.Fatal(err)
				}
			}
			err := h.set.Charge(h.board, Usage{}, 0)
			var be *BudgetError
			if !tc.wantLimit {
				if err != nil {
					t.Fatalf("charge: %v", err)
				}
				return
			}
			if !errors.As(err, &be) {
				t.Fatalf("charge: %v, want a limit crossed", err)
			}
			if diff := be.SpentUSD - tc.wantUSD; diff > 1e-9 || diff < -1e-9 || be.Used != tc.wantUsed {
				t.Errorf("spent $%v, used %d; want $%v, %d", be.SpentUSD, be.Used, tc.wantUSD, tc.wantUsed)
			}
		})
	}
}

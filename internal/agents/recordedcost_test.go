package agents

import (
	"encoding/json"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// A recorded call costs what it cost the agent that answered: nothing for
// a script agent named after a priced model; a recording that does not
// say is priced at its model's price.
func TestRecordedCostFromTheAgent(t *testing.T) {
	for _, tc := range []struct {
		name, response string
		want           float64
		known          bool
	}{
		{"script agent, priced at nothing", `{"text":"ok","model":"gpt-4o-mini","usage":{"input_tokens":1000000,"output_tokens":0},"priced":true}`, 0, true},
		{"provider, priced when made", `{"text":"ok","model":"gpt-4o-mini","usage":{"input_tokens":1000000,"output_tokens":0},"cost_usd":0.1,"priced":true}`, 0.1, true},
		{"no cost recorded: the model's price", `{"text":"ok","model":"gpt-4o-mini","usage":{"input_tokens":1000000,"output_tokens":0}}`, 0.15, true},
		{"no cost recorded, unknown model", `{"text":"ok","model":"mystery","usage":{"input_tokens":10,"output_tokens":0}}`, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := board.Recording{Kind: KindLLM, Response: json.RawMessage(tc.response)}
			got, known := RecordingCost(rec)
			if got != tc.want || known != tc.known {
				t.Errorf("RecordingCost = %v, %v; want %v, %v", got, known, tc.want, tc.known)
			}
			u := RecordedUsage([]board.Recording{rec})
			if u.CostUSD != tc.want || u.PriceKnown != tc.known {
				t.Errorf("RecordedUsage = %+v; want cost %v, known %v", u, tc.want, tc.known)
			}
		})
	}
}

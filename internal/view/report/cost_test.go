package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// Costs are written as runner writes them everywhere (board.FormatUSD):
// a cost of a few millionths of a dollar is not "$0.0000". Each call
// says its cost (recorded, else at its model's price), each step the sum
// of its calls; a call whose price is unknown says none.
func TestReportCosts(t *testing.T) {
	llm := func(label string, call int, model, extra string) board.Recording {
		return board.Recording{Label: label, Visit: 1, Kind: "llm", Call: call, Agent: "coder",
			Request:  json.RawMessage(`{"model":"` + model + `","messages":[{"role":"user","content":"q"}]}`),
			Response: json.RawMessage(`{"text":"ans","usage":{"input_tokens":300,"output_tokens":80},"model":"` + model + `"` + extra + `}`)}
	}
	cases := []struct {
		name string
		recs []board.Recording
		want []string
		not  []string
	}{
		{"recorded cost", []board.Recording{llm("a", 1, "m1", `,"cost_usd":0.00004`)},
			[]string{`300 in, 80 out tokens · <span class="cost">$0.000040</span> · `, `, <span class="cost">$0.000040</span></span></summary>`,
				`<td class="n">$0.000040</td></tr>`},
			[]string{"$0.0000<"}},
		{"priced by model", []board.Recording{llm("a", 1, "gpt-4o-mini", "")}, // (300×0.15 + 80×0.60) / 1e6
			[]string{`tokens · <span class="cost">$0.000093</span> · `, `<td class="n">$0.000093</td></tr>`}, nil},
		{"step sums its calls", []board.Recording{llm("a", 1, "m1", `,"cost_usd":0.00004`), llm("a", 2, "gpt-4o-mini", "")},
			[]string{`, <span class="cost">$0.00013</span></span></summary>`, `<span class="cost">$0.000040</span>`, `<span class="cost">$0.000093</span>`}, nil},
		{"unknown price", []board.Recording{llm("a", 1, "m-unknown", "")},
			[]string{`300 in, 80 out tokens · `}, []string{`class="cost"`, "<th>cost</th>"}},
		{"dollars", []board.Recording{llm("a", 1, "m1", `,"cost_usd":1.234`)},
			[]string{`<span class="cost">$1.23</span>`}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := render(t, board.Run{ID: "r", Status: "succeeded"},
				[]board.StepRecord{step("a", 1, "", "succeeded", 0, 10, `{"output":"ans"}`)},
				func(b *board.Board) {
					for _, r := range c.recs {
						b.AddRecording(r)
					}
				})
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("report lacks %s", w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(out, w) {
					t.Errorf("report has %s", w)
				}
			}
		})
	}
}

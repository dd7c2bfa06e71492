package report

import (
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
)

// Tokens runs at the end of every run: it sums the same figures as the
// report's usage table, and a large recorded answer is not copied to do
// it (a copy is 50 MB more at the run's peak for a 50 MB answer).
func TestTokensLargeAnswer(t *testing.T) {
	rec := func(model, reqModel, text string, in, out int, cost float64) board.Recording {
		resp, _ := json.Marshal(agents.Response{Text: text, Model: model, CostUSD: cost,
			Usage: agents.Usage{InputTokens: in, OutputTokens: out}})
		req, _ := json.Marshal(map[string]any{"model": reqModel, "system": strings.Repeat("s", 100)})
		return board.Recording{Label: "ask", Kind: agents.KindLLM, Request: req, Response: resp}
	}
	recs := []board.Recording{
		rec("script", "script", strings.Repeat("x", 8<<20), 10, 2<<20, 0.25),
		rec("", "gpt-4o", "short", 100, 20, 0),
		{Label: "clock", Kind: "clock", Response: json.RawMessage(`{"text":"not a model call"}`)},
		{Label: "bad", Kind: agents.KindLLM, Response: json.RawMessage(`{`)},
		rec("script", "script", "again", 1, 2, 0.5),
	}
	models, _, _, _ := usage(recs, map[string][]callView{})
	var want []ModelUsage
	for _, m := range models {
		want = append(want, ModelUsage{Model: m.Model, Calls: m.Calls, InputTokens: m.Input, OutputTokens: m.Output, CostUSD: m.Cost,
			PriceKnown: m.Model == "script"}) // the gpt-4o answer names no model to price it by
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got := Tokens(recs)
	runtime.ReadMemStats(&after)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Tokens = %+v\nwant (as the report sums) %+v", got, want)
	}
	if len(got) != 2 || got[1].Model != "script" || got[1].Calls != 2 || got[1].OutputTokens != 2<<20+2 {
		t.Errorf("Tokens = %+v; want gpt-4o (1 call) and script (2 calls, %d out)", got, 2<<20+2)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("summing tokens over an 8 MiB answer allocated %d bytes; want no copy of its text", n)
	}
}

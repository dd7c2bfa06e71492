package agents

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// A recorded answer is the same bytes as json.Marshal made (a replay
// compares recordings), and a large one is allocated once, not about four
// times as json.Marshal does.
func TestEncodeResponseLarge(t *testing.T) {
	big := strings.Repeat("<tag> & \"quote\" \u2028 \xff\n", 1<<14) + strings.Repeat("x", 4<<20)
	for _, resp := range []*Response{
		{Text: "short", Model: "m"},
		{Text: big},
		{Text: big, Model: "m", FinishReason: "stop", Usage: Usage{InputTokens: 3, OutputTokens: 9},
			ToolCalls:  []ToolCall{{ID: "c1", Name: "read", Args: json.RawMessage(`{"path":"a<b"}`)}},
			FailedOver: []Failure{{Agent: "x", Error: "boom"}}, CostUSD: 0.5, Retries: 2, Reused: true},
	} {
		want, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC() // twice: encoding/json's pool of buffers is emptied, as in a run
		runtime.GC()
		runtime.ReadMemStats(&before)
		got, err := encodeResponse(resp)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("got %.80q…, want %.80q…", got, want)
		}
		if perByte := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(got)); len(got) > 1<<20 && perByte > 1.1 {
			t.Errorf("recording a %d-byte answer allocated %.2f bytes per byte; want one buffer of its size", len(got), perByte)
		}
	}
}

// Costing a recorded answer (every run does, for its summary) does not
// copy the answer's text, and gives the cost the whole response gives.
func TestRecordingCostLargeAnswer(t *testing.T) {
	resp := &Response{Text: strings.Repeat("x", 8<<20), Model: "script", Usage: Usage{InputTokens: 10, OutputTokens: 2 << 20}, CostUSD: 0.25}
	raw, _ := json.Marshal(resp)
	rec := board.Recording{Kind: KindLLM, Response: raw}
	want, wantOK := responseCost(resp)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, ok := RecordingCost(rec)
	runtime.ReadMemStats(&after)
	if got != want || ok != wantOK {
		t.Errorf("cost %v, %v; want %v, %v", got, ok, want, wantOK)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("costing an 8 MiB answer allocated %d bytes; want no copy of its text", n)
	}
}

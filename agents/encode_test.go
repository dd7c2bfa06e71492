package agents

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// A recorded answer is the same bytes as json.Marshal made (a replay
// compares recordings), and a large one is allocated once, not about four
// times (issue 22).
func TestEncodeResponseLarge(t *testing.T) {
	big := strings.Repeat("<tag> & \"quote\" \u2028 \xff\n", 1<<14) + strings.Repeat("x", 4<<20)
	for _, resp := range []*Response{
		{Text: "short", Model: "m"},
		{Text: big},
		{Text: big, Model: "m", FinishReason: "stop", Usage: Usage{InputTokens: 3, OutputTokens: 9},
			ToolCalls: []ToolCall{{ID: "c1", Name: "read", Args: json.RawMessage(`{"path":"a<b"}`)}},
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

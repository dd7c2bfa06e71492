package agents

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// A replayed answer is recorded again as the recording holds it: the
// replay's recording is the original's bytes (not the answer encoded once
// more: a 50 MiB answer was held twice more by a replay, issue 22), so
// answering a call from an 8 MiB recorded answer costs about one copy of
// its text (the answer handed to the step), not two.
func TestReplayedAnswerRecordedOnce(t *testing.T) {
	recs := recordRun(t)
	text := strings.Repeat("answer\n", (8<<20)/7)
	big, err := json.Marshal(&Response{Text: text, Model: "gpt-4o", FinishReason: "stop", Usage: Usage{InputTokens: 5, OutputTokens: 7}})
	if err != nil {
		t.Fatal(err)
	}
	recs[0].Response = big
	h := newHarness(t, onePlan(openAIAgent("http://127.0.0.1:1")), func(o *Options) {
		o.Replay = FromRecordings(recs)
		o.Getenv = func(string) string { return "" }
		o.HTTPClient = &http.Client{Transport: noNetwork{t}}
	})
	ss := h.session(t, "ask", "coder")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, err := ss.Send(context.Background(), user("first"))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != text {
		t.Fatalf("replayed answer of %d bytes, want the recorded %d", len(resp.Text), len(text))
	}
	got := h.board.Recordings()
	if len(got) != 1 || string(got[0].Response) != string(big) {
		t.Fatalf("the replay's recording is not the recorded answer's bytes")
	}
	if perByte := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(text)); perByte > 1.5 {
		t.Errorf("answering from an 8 MiB recorded answer allocated %.2f bytes per byte of it; want about 1 (the text handed to the step)", perByte)
	}
}

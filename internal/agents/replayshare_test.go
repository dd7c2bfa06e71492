package agents

import (
	"context"
	"encoding/json"
	"github.com/planrunner/runner/internal/board"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// A replayed answer is recorded again as the recording holds it: the
// replay's recording is the original's bytes (not the answer encoded once
// more: that would hold a 50 MiB answer twice more in a replay), so
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

// The sums made at the end of every run (tokens and cost per agent, the
// run's usage) and at a resume's start read each recorded answer's usage,
// not its text: an 8 MiB answer is not copied for them (a copy would be
// 50 MB more at the end of a run with a 50 MB answer).
func TestUsageSumsDoNotCopyTheAnswer(t *testing.T) {
	h := newHarness(t, onePlan(openAIAgent("http://127.0.0.1:1")), nil)
	text := strings.Repeat("answer\n", (8<<20)/7)
	raw, err := json.Marshal(&Response{Text: text, Model: "gpt-4o", Usage: Usage{InputTokens: 1000, OutputTokens: 2000}, CostUSD: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	b := board.New(board.Run{ID: "r"})
	if err := b.AddRecording(board.Recording{Label: "ask", Visit: 1, Call: 1, Kind: KindLLM, Agent: "coder", Response: raw}); err != nil {
		t.Fatal(err)
	}
	recs := b.Recordings()
	for _, tc := range []struct {
		name  string
		sum   func() any
		check func(v any) bool
	}{
		{"Spend", func() any { return h.set.Spend(b) }, func(v any) bool {
			s := v.([]AgentSpend)
			return len(s) == 1 && s[0].Calls == 1 && s[0].OutputTokens == 2000 && s[0].CostUSD == 0.5
		}},
		{"RecordedUsage", func() any { return RecordedUsage(recs) }, func(v any) bool {
			u := v.(RunUsage)
			return u.Calls == 1 && u.InputTokens == 1000 && u.CostUSD == 0.5
		}},
		{"StatsOf", func() any { return StatsOf(recs) }, func(v any) bool {
			return v.(ReuseStats).LiveCalls == 1 && v.(ReuseStats).LiveTokens == 3000
		}},
		{"WentLive", func() any { return WentLive(recs[0]) }, func(v any) bool { return v.(bool) }},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		got := tc.sum()
		runtime.ReadMemStats(&after)
		if !tc.check(got) {
			t.Errorf("%s = %+v", tc.name, got)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Errorf("%s over an 8 MiB answer allocated %d bytes; want no copy of its text", tc.name, n)
		}
	}
}

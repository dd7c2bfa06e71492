package board

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// The hand-written journal encoders must produce what encoding/json would
// decode to the same values.
func TestEncodersMatchEncodingJSON(t *testing.T) {
	ttl := 1.5
	ts := time.Date(2026, 11, 22, 10, 30, 0, 123456789, time.UTC)
	entries := []Entry{
		{ID: "01J", Seq: 17, Section: "patches", Role: "assistant", Author: "coder", Label: "generate",
			Content: "quote \" backslash \\ newline \n tab \t nul \x00 <&> \u2028 bad \xff é", Meta: map[string]any{"visit": 2}, TS: ts, TTL: &ttl},
		{Seq: 1, Content: map[string]any{"a": []any{1.0, "x", nil}}, TS: ts, Key: "k", Version: 3, Deleted: true},
		{Seq: 2, Content: nil, Meta: nil, TS: ts},
	}
	for _, e := range entries {
		b, err := appendEntry(nil, &e, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got, want Entry
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		std, _ := json.Marshal(e)
		json.Unmarshal(std, &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("entry:\n got %+v\nwant %+v", got, want)
		}
	}
	steps := []StepRecord{
		{Label: "x", Visit: 2, Type: "command", Parent: "g", Status: "failed", StartedAt: ts, FinishedAt: ts.Add(time.Second),
			DurationMS: 1000, Attempts: 3, Goto: "end", Result: json.RawMessage(`{"output":"a","exit_code":1}`), Error: "exit \"1\"", Delays: []int64{500, 1000}},
		{Label: "y", Visit: 1, Status: "succeeded"},
	}
	for _, s := range steps {
		b, err := appendStep(nil, &s, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got, want StepRecord
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		std, _ := json.Marshal(s)
		json.Unmarshal(std, &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("step:\n got %+v\nwant %+v", got, want)
		}
	}
}

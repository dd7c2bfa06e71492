package board

import (
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestStepTimesComeBackAsGiven: a row keeps a record's times in 8 bytes
// each when they are UTC instants, and whole otherwise; either way a
// record comes back with the times it was given, live and through the
// saved file.
func TestStepTimesComeBackAsGiven(t *testing.T) {
	utc := time.Date(2026, 11, 30, 7, 23, 31, 343816125, time.UTC)
	paris := time.FixedZone("CET", 3600)
	tests := []struct {
		name              string
		started, finished time.Time
		saved             bool // the file says them as they were (no monotonic reading, a zone it names by offset)
	}{
		{"UTC", utc, utc.Add(time.Millisecond), true},
		{"zero", time.Time{}, time.Time{}, true},
		{"zero start", time.Time{}, utc, true},
		{"another zone", utc.In(paris), utc.In(paris).Add(time.Second), false},
		{"one in another zone", utc, utc.In(paris), false},
		{"local, with a monotonic reading", time.Now(), time.Now(), false},
		{"past 2262", time.Date(3000, 1, 1, 0, 0, 0, 1, time.UTC), time.Date(3000, 1, 1, 0, 0, 1, 0, time.UTC), true},
		{"before 1678", time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), utc, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "blackboard.json")
			b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			in := StepRecord{Label: "a", Visit: 1, Type: "command", Status: StatusSucceeded, Attempts: 1,
				StartedAt: tt.started, FinishedAt: tt.finished, Result: json.RawMessage(`{"output":"x"}`)}
			if err := b.AddStep(in); err != nil {
				t.Fatal(err)
			}
			got := b.Steps()[0]
			if !reflect.DeepEqual(got.StartedAt, tt.started) || !reflect.DeepEqual(got.FinishedAt, tt.finished) {
				t.Errorf("live: times %v, %v; want %v, %v", got.StartedAt, got.FinishedAt, tt.started, tt.finished)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			back, err := LoadForRead(path)
			if err != nil {
				t.Fatal(err)
			}
			got = back.Steps()[0]
			if !got.StartedAt.Equal(tt.started) || !got.FinishedAt.Equal(tt.finished) {
				t.Errorf("saved: times %v, %v; want %v, %v", got.StartedAt, got.FinishedAt, tt.started, tt.finished)
			}
			if tt.saved && (!reflect.DeepEqual(got.StartedAt, tt.started) || !reflect.DeepEqual(got.FinishedAt, tt.finished)) {
				t.Errorf("saved: times %#v, %#v; want %#v, %#v", got.StartedAt, got.FinishedAt, tt.started, tt.finished)
			}
		})
	}
}

// TestStepRecordsComeBackAsGiven: a record comes back as given, live
// and through the saved file, whatever its row keeps apart: counts
// beyond 32 bits, a large result held apart, the fields few records
// have (alone, or with those fewer still have), a type and status other
// rows share.
func TestStepRecordsComeBackAsGiven(t *testing.T) {
	at := time.Date(2026, 11, 30, 7, 23, 31, 343816125, time.UTC)
	large := json.RawMessage(`{"output":"` + strings.Repeat("x", BlobMin+10) + `"}`)
	small := json.RawMessage(`{"output":"x"}`)
	in := []StepRecord{
		{Label: "a", Visit: 1, Type: "command", Status: StatusSucceeded, Attempts: 1, Result: small},
		{Label: "b", Visit: 1, Type: "command", Status: StatusSucceeded, Attempts: 1, Result: small},
		{Label: "many", Visit: math.MaxInt, Type: "command", Status: StatusSucceeded, Attempts: math.MaxInt32, Result: small},
		{Label: "none", Visit: 0, Type: "", Status: "", Result: small},
		{Label: "branch", Visit: 1, Type: "branch", Status: StatusSucceeded, Attempts: 1, Goto: "a", Result: small},
		{Label: "failed", Visit: 1, Type: "command", Status: StatusFailed, Attempts: 1, Error: "exit 1", Result: small},
		{Label: "large", Visit: 2, Type: "llm", Status: StatusFailed, Attempts: 3, Result: large},
		{Label: "all", Visit: 3, Type: "llm", Status: StatusFailed, Attempts: 2, Result: large, Error: "boom",
			Parent: "group", Goto: "next", Host: "h1", Agent: "critic", Delays: []int64{5, 10},
			Inputs: map[string]string{"prompt": "hi"}},
	}
	for i := range in {
		in[i].StartedAt, in[i].FinishedAt, in[i].DurationMS = at, at.Add(time.Duration(i)*time.Second), int64(i)*1000
	}
	path := filepath.Join(t.TempDir(), "blackboard.json")
	b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range in {
		if err := b.AddStep(s); err != nil {
			t.Fatal(err)
		}
	}
	same := func(where string, got []StepRecord) {
		t.Helper()
		if len(got) != len(in) {
			t.Fatalf("%s: %d records, want %d", where, len(got), len(in))
		}
		for i := range in {
			if !reflect.DeepEqual(got[i], in[i]) {
				t.Errorf("%s: record %d\n%+v\nwant\n%+v", where, i, got[i], in[i])
			}
		}
	}
	same("live", b.Steps())
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	back, err := LoadForRead(path)
	if err != nil {
		t.Fatal(err)
	}
	same("saved", back.Steps())
}

package engine

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// oldEncodeResult is encodeResult through json.Marshal: what a saved
// result must still look like, byte for byte (a replay compares them).
func oldEncodeResult(res Result) []byte {
	out, _ := json.Marshal(res.Output)
	buf := append([]byte(`{"output":`), out...)
	if res.Fields == nil {
		if res.TimedOut {
			buf = append(buf, `,"timed_out":true`...)
		}
		return append(buf, '}')
	}
	fields, _ := json.Marshal(res.Fields)
	if res.TimedOut && !bytes.Contains(fields, []byte(`"timed_out":true`)) {
		buf = append(buf, `,"timed_out":true`...)
	}
	if len(fields) > 2 {
		buf = append(buf, ',')
	}
	return append(buf, fields[1:]...)
}

type testFields struct {
	Exit     int  `json:"exit_code"`
	TimedOut bool `json:"timed_out,omitempty"`
}

type emptyFields struct{}

// A step's saved result is the same bytes as before, large outputs or
// not, and encoding one with a large output allocates it once (it was
// about four times through json.Marshal).
func TestEncodeResultLargeOutput(t *testing.T) {
	big := strings.Repeat("a<b>&\n", 1<<18) + strings.Repeat("x", 4<<20)
	for _, res := range []Result{
		{Output: "small"},
		{Output: big},
		{Output: big, TimedOut: true},
		{Output: map[string]any{"text": big, "n": 3.0, "list": []any{big, true}}},
		{Output: big, Fields: testFields{Exit: 2}},
		{Output: big, Fields: testFields{Exit: 2, TimedOut: true}, TimedOut: true},
		{Output: big, Fields: testFields{}, TimedOut: true},
		{Output: nil, Fields: emptyFields{}},
		{Output: big, Fields: emptyFields{}},
	} {
		want := oldEncodeResult(res)
		var before, after runtime.MemStats
		runtime.GC() // twice: encoding/json's pool of buffers is emptied, as in a run
		runtime.GC()
		runtime.ReadMemStats(&before)
		got, err := encodeResult(res)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("got %.80q…, want %.80q…", got, want)
		}
		if !json.Valid(got) {
			t.Errorf("not JSON: %.80q", got)
		}
		if perByte := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(got)); len(got) > 1<<20 && perByte > 1.1 {
			t.Errorf("encoding a %d-byte result allocated %.2f bytes per byte; want one buffer of its size", len(got), perByte)
		}
	}
}

// TestEncodeResultHasNoRoomToSpare: the board keeps a step's result as
// encoded for the rest of the run, so its buffer is exactly its bytes
// (room to spare would be a larger allocation kept per step).
func TestEncodeResultHasNoRoomToSpare(t *testing.T) {
	for _, res := range []Result{
		{Output: "hi me 0"},
		{Output: "hi", Fields: map[string]any{"key": "k0", "version": 1, "found": true}},
		{Output: 3, Fields: testFields{Exit: 1}},
		{Output: nil, Fields: emptyFields{}},
		{Output: "late", TimedOut: true},
		{Output: "late", TimedOut: true, Fields: testFields{Exit: 124}},
	} {
		got, err := encodeResult(res)
		if err != nil {
			t.Fatal(err)
		}
		if want := oldEncodeResult(res); !bytes.Equal(got, want) {
			t.Errorf("%+v: %s, want %s", res, got, want)
		}
		if cap(got) != len(got) {
			t.Errorf("%+v: %d bytes in a buffer of %d", res, len(got), cap(got))
		}
	}
}

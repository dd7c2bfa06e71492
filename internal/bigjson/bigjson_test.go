package bigjson

import (
	"bytes"
	"encoding/json"
	"math"
	"runtime"
	"strings"
	"testing"
)

// Marshal writes what json.Marshal writes, byte for byte, for large
// values of every shape it handles itself and the ones it hands on: a
// saved run's results and recordings are compared byte for byte by a
// replay, so an encoding that differed would make a replay diverge.
func TestMarshalSameAsEncodingJSON(t *testing.T) {
	big := strings.Repeat("x", Large)
	tricky := big + "<a href=\"x\">&amp;</a>\\ \b\f\n\r\t\x00\x1f\x7f é \u2028\u2029 \xff\xfe end 😀"
	type S struct {
		A string `json:"a"`
		B int    `json:"b,omitempty"`
	}
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"small string", "small <b>"},
		{"large plain", big},
		{"large with escapes", tricky},
		{"large key", map[string]any{tricky: 1}},
		{"map sorted", map[string]any{"z": big, "a": 1.5, "m": nil, "é": true, "A": []any{big, 2, "x"}}},
		{"nested", map[string]any{"out": map[string]any{"text": tricky, "list": []any{map[string]any{}, []any{}, nil}}}},
		{"nil map and slice", []any{big, map[string]any(nil), []any(nil)}},
		{"handed on", []any{big, json.Number("12.50"), json.RawMessage(` {"a" : 1} `), S{A: "<x>"}, &S{A: big}, []string{big}, 1e21, int64(-3), uint8(7)}},
		{"small map", map[string]any{"a": "b"}},
	} {
		want, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Marshal(tc.v)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !bytes.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Errorf("%s: differs from encoding/json at byte %d: got %.60q, want %.60q", tc.name, i, got[i:], want[i:])
		}
		if len(got) != cap(got) && hasLarge(tc.v, 0) {
			t.Errorf("%s: buffer of %d bytes for %d: not sized exactly", tc.name, cap(got), len(got))
		}
	}
}

// What json.Marshal refuses, Marshal refuses, with its error; a map that
// holds itself is an error, not a crash.
func TestMarshalErrors(t *testing.T) {
	big := strings.Repeat("x", Large)
	loop := map[string]any{"big": big}
	loop["self"] = loop
	for _, v := range []any{
		[]any{big, math.NaN()},
		map[string]any{"big": big, "ch": make(chan int)},
		loop,
	} {
		_, want := json.Marshal(v)
		_, got := Marshal(v)
		if got == nil || want == nil {
			t.Errorf("got error %v, encoding/json %v; want both to fail", got, want)
		}
	}
}

// Encoding a large string allocates it once (json.Marshal: about four
// times).
func TestMarshalLargeAllocatesOnce(t *testing.T) {
	const size = 8 << 20
	for _, v := range []any{
		strings.Repeat("x", size),
		map[string]any{"text": strings.Repeat("y<", size/2), "n": 1},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b, err := Marshal(v)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		perByte := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(b))
		t.Logf("%.2f bytes allocated per byte encoded", perByte)
		if perByte > 1.05 {
			t.Errorf("encoding %d bytes allocated %.2f bytes per byte; want one buffer of the result's size", len(b), perByte)
		}
	}
}

// Append puts the encoding after what dst holds, in one allocation with
// the room asked for after it.
func TestAppendOneAllocation(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	for _, v := range []any{big, "small"} {
		want, _ := json.Marshal(v)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		got, err := Append([]byte(`{"output":`), v, 1)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, append([]byte(`{"output":`), want...)) {
			t.Errorf("got %.40q", got)
		}
		if cap(got)-len(got) < 1 {
			t.Errorf("no room left for the byte asked for")
		}
		if len(v.(string)) >= Large && float64(after.TotalAlloc-before.TotalAlloc) > 1.05*float64(len(got)) {
			t.Errorf("appending %d bytes allocated %d", len(got), after.TotalAlloc-before.TotalAlloc)
		}
	}
}

package board

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestRedactKeepsWhatItDoesNotMask: masking a value with no secret in it
// gives back the value itself, allocating nothing (the board keeps what
// enters it; a copy of every step's content or meta was kept beside the
// caller's), and a value with one gives a masked copy, the caller's left
// as it was.
func TestRedactKeepsWhatItDoesNotMask(t *testing.T) {
	mask := func(s string) string { return strings.ReplaceAll(s, "SECRET-123", "***") }
	type named string
	tests := []struct {
		name        string
		clean, dirt func() any
		want        any // dirt masked
	}{
		{"string", func() any { return strings.Repeat("x", 5) }, func() any { return "a SECRET-123" }, "a ***"},
		{"named string", func() any { return named("plain") }, func() any { return named("SECRET-123") }, "***"},
		{"map", func() any { return map[string]any{"a": "b", "n": 1} }, func() any { return map[string]any{"a": "SECRET-123", "n": 1} }, map[string]any{"a": "***", "n": 1}},
		{"list", func() any { return []any{"a", true, nil} }, func() any { return []any{"a", "SECRET-123"} }, []any{"a", "***"}},
		{"number", func() any { return 1.5 }, func() any { return 1.5 }, 1.5},
		{"json", func() any { return json.RawMessage(`{"a":"b"}`) }, func() any { return json.RawMessage(`{"a":"SECRET-123"}`) }, json.RawMessage(`{"a":"***"}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.clean()
			if got := RedactValue(v, mask); !reflect.DeepEqual(got, v) {
				t.Errorf("RedactValue(%v) = %v, want it unchanged", v, got)
			}
			if n := testing.AllocsPerRun(50, func() { _ = redactValue(v, mask) }); n != 0 {
				t.Errorf("masking %v, with nothing to mask, allocates %v times, want none", v, n)
			}
			d := tc.dirt()
			before := mustJSON(t, d)
			if got := RedactValue(d, mask); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("RedactValue(%v) = %#v, want %#v", d, got, tc.want)
			}
			if after := mustJSON(t, d); string(after) != string(before) {
				t.Errorf("masking changed the caller's value: %s, was %s", after, before)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

package replay

import (
	"encoding/json"
	"testing"
)

// A file saved without a model step's cache and reasoning counts replays
// to a result that has them: the same outcome. A count it had and that
// differs now is a difference.
func TestWithoutNewUsage(t *testing.T) {
	for _, tc := range []struct {
		name, was, now string
		same           bool
	}{
		{"saved without the counts", `{"text":"x","usage":{"input_tokens":10,"output_tokens":2}}`,
			`{"text":"x","usage":{"input_tokens":10,"output_tokens":2,"cache_read_input_tokens":8,"reasoning_tokens":1}}`, true},
		{"saved with them, now others", `{"usage":{"input_tokens":10,"output_tokens":2,"cache_read_input_tokens":8}}`,
			`{"usage":{"input_tokens":10,"output_tokens":2,"cache_read_input_tokens":7}}`, false},
		{"the tokens themselves differ", `{"usage":{"input_tokens":10,"output_tokens":2}}`,
			`{"usage":{"input_tokens":11,"output_tokens":2,"reasoning_tokens":1}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := normalResult(json.RawMessage(tc.was), nil), normalResult(json.RawMessage(tc.now), nil)
			if n, ok := withoutNewUsage(json.RawMessage(tc.was), json.RawMessage(tc.now)); ok {
				b = normalResult(n, nil)
			}
			if (a == b) != tc.same {
				t.Errorf("same = %v, want %v:\n%s\n%s", a == b, tc.same, a, b)
			}
		})
	}
}

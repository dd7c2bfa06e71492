package bigjson

import (
	"encoding/json"
	"testing"
	"time"
)

// A decode error says where it is and what was found against what was
// wanted, in JSON's words, never Go's type names.
func TestExplain(t *testing.T) {
	type run struct {
		ID    string    `json:"id"`
		Steps int       `json:"steps"`
		Tags  []string  `json:"tags"`
		At    time.Time `json:"at"`
	}
	type file struct {
		Format string `json:"format"`
		Run    *run   `json:"run"`
	}
	for _, tc := range []struct{ in, want string }{
		{"{", "line 1, column 2: unexpected end of JSON input"},
		{"{\n  \"format\": 2\n}", `line 2, column 13: "format" holds a number, want text`},
		{"[1]", "line 1, column 1: a list, want an object"},
		{`{"run": "x"}`, `line 1, column 11: "run" holds text, want an object`},
		{"{\"run\": {\n\"steps\": 1.5}}", `line 2, column 12: "steps" holds the number 1.5, want a whole number`},
		{`{"run": {"tags": {}}}`, `line 1, column 18: "tags" holds an object, want a list`},
		{`{"run": {"id": true}}`, `line 1, column 19: "id" holds true or false, want text`},
		{"{\n\"format\": \"1\",\n\"x\": ]", "line 3, column 6: invalid character ']' looking for beginning of value"},
	} {
		var f file
		err := Explain([]byte(tc.in), json.Unmarshal([]byte(tc.in), &f))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %s", tc.in, err, tc.want)
		}
	}
	// Not encoding/json's: as it is.
	var f file
	in := []byte(`{"run": {"at": "yesterday"}}`)
	uerr := json.Unmarshal(in, &f)
	if err := Explain(in, uerr); err != uerr {
		t.Errorf("a time that does not parse: %v, want %v", err, uerr)
	}
	if Explain(in, nil) != nil {
		t.Error("no error explained as one")
	}
	// A part of a larger text: its place in the whole.
	whole := []byte("{\"a\": 1}\n{\"format\": 3}\n")
	var g file
	if err := ExplainAt(whole, 9, "entry 2", json.Unmarshal(whole[9:22], &g)); err == nil ||
		err.Error() != `line 2, column 12: entry 2: "format" holds a number, want text` {
		t.Errorf("part: %v", err)
	}
}

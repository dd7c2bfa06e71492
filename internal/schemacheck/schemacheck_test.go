package schemacheck

import (
	"encoding/json"
	"testing"

	"gopkg.in/yaml.v3"
)

// A bad schema is reported at the YAML line of the bad keyword; a value
// that does not match is reported in one line, at its JSON place.
func TestProblemAndMessage(t *testing.T) {
	tests := []struct {
		name, schema, value string
		wantLine            int
		wantMsg             string
	}{
		{"bad type", "type: object\nproperties:\n  n: {type: strin}\n", "", 3,
			"at '/properties/n/type': value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string' (not a valid JSON Schema)"},
		{"wrong type", "type: object\nproperties:\n  count: {type: integer}\n", `{"count": "x"}`, 0,
			"at '/count': got string, want integer"},
		{"missing", "type: object\nrequired: [a, b]\n", `{}`, 0,
			"at '': missing properties 'a', 'b'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(tc.schema), &doc); err != nil {
				t.Fatal(err)
			}
			var v any
			if err := doc.Decode(&v); err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(JSONValue(v))
			if err != nil {
				t.Fatal(err)
			}
			sch, err := Compile("schema.json", raw)
			if tc.value == "" {
				if err == nil {
					t.Fatal("compiled a bad schema")
				}
				at, msg := Problem(doc.Content[0], err)
				if at.Line != tc.wantLine || msg != tc.wantMsg {
					t.Errorf("got line %d %q, want line %d %q", at.Line, msg, tc.wantLine, tc.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var x any
			if err := json.Unmarshal([]byte(tc.value), &x); err != nil {
				t.Fatal(err)
			}
			err = sch.Validate(x)
			if err == nil {
				t.Fatal("no error")
			}
			if got := Message(err); got != tc.wantMsg {
				t.Errorf("got %q, want %q", got, tc.wantMsg)
			}
		})
	}
}

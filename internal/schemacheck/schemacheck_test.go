package schemacheck

import (
	"encoding/json"
	"fmt"
	"testing"

	"gopkg.in/yaml.v3"
)

// compileYAML compiles a schema written as YAML, as plans write them.
func compileYAML(t *testing.T, src string) (*yaml.Node, *Schema, error) {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
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
	return doc.Content[0], sch, err
}

// A bad schema is reported at the YAML line and column of the bad keyword
// (or of the bad element in it), in one line.
func TestBadSchemas(t *testing.T) {
	tests := []struct {
		name, schema string
		wantAt       string // line:col
		wantMsg      string
	}{
		{"type misspelt", "type: object\nproperties:\n  n: {type: strin}\n", "3:13",
			"at '/properties/n/type': value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string' (not a valid JSON Schema)"},
		{"type list", "type: [string, nul]\n", "1:16",
			"at '/type/1': value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string' (not a valid JSON Schema)"},
		{"type number", "type: 3\n", "1:7", "at '/type': want a type name or a list of them, got a number (not a valid JSON Schema)"},
		{"properties list", "type: object\nproperties: [a, b]\n", "2:13", "at '/properties': want a mapping of names to schemas, got a list (not a valid JSON Schema)"},
		{"property not schema", "properties:\n  a: 3\n", "2:6", "at '/properties/a': want a schema (a mapping or true/false), got a number (not a valid JSON Schema)"},
		{"patternProperties regexp", "patternProperties:\n  '[a-': {}\n", "2:10", "at '/patternProperties/[a-': not a regular expression: error parsing regexp: missing closing ]: `[a-` (not a valid JSON Schema)"},
		{"$defs", "$defs:\n  x: {type: intger}\n", "2:13", "at '/$defs/x/type': value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string' (not a valid JSON Schema)"},
		{"items string", "type: array\nitems: string\n", "2:8", "at '/items': want a schema (a mapping or true/false), got a string (not a valid JSON Schema)"},
		{"items deep", "type: array\nitems:\n  type: object\n  required: name\n", "4:13", "at '/items/required': want a list of property names, got a string (not a valid JSON Schema)"},
		{"additionalProperties", "additionalProperties: no\n", "1:23", "at '/additionalProperties': want a schema (a mapping or true/false), got a string (not a valid JSON Schema)"},
		{"not", "not: [a]\n", "1:6", "at '/not': want a schema (a mapping or true/false), got a list (not a valid JSON Schema)"},
		{"if then else", "if: {}\nthen: {}\nelse: {type: nmber}\n", "3:14", "at '/else/type': value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string' (not a valid JSON Schema)"},
		{"required element", "required: [a, 2]\n", "1:15", "at '/required/1': want a property name (a string), got a number (not a valid JSON Schema)"},
		{"enum", "enum: red\n", "1:7", "at '/enum': want a list of values, got a string (not a valid JSON Schema)"},
		{"minimum", "minimum: low\n", "1:10", "at '/minimum': want a number, got a string (not a valid JSON Schema)"},
		{"maximum", "maximum: [1]\n", "1:10", "at '/maximum': want a number, got a list (not a valid JSON Schema)"},
		{"minLength negative", "minLength: -1\n", "1:12", "at '/minLength': want a non-negative integer, got -1 (not a valid JSON Schema)"},
		{"maxItems fraction", "maxItems: 1.5\n", "1:11", "at '/maxItems': want a non-negative integer, got 1.5 (not a valid JSON Schema)"},
		{"pattern", "type: string\npattern: '(a'\n", "2:10", "at '/pattern': not a regular expression: error parsing regexp: missing closing ): `(a` (not a valid JSON Schema)"},
		{"format", "format: 3\n", "1:9", "at '/format': want a string, got a number (not a valid JSON Schema)"},
		{"allOf empty", "allOf: []\n", "1:8", "at '/allOf': want at least one schema, got an empty list (not a valid JSON Schema)"},
		{"anyOf not list", "anyOf: {type: string}\n", "1:8", "at '/anyOf': want a list of schemas, got a mapping (not a valid JSON Schema)"},
		{"oneOf element", "oneOf:\n  - {type: string}\n  - {type: [int]}\n", "3:13", "at '/oneOf/1/type/0': value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string' (not a valid JSON Schema)"},
		{"$schema", "$schema: http://json-schema.org/draft-04/schema#\n", "1:10", `at '/$schema': runner checks draft 2020-12 and draft-07 schemas, got "http://json-schema.org/draft-04/schema#" (not a valid JSON Schema)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, _, err := compileYAML(t, tc.schema)
			if err == nil {
				t.Fatal("compiled a bad schema")
			}
			at, msg := Problem(n, err)
			if got := fmt.Sprintf("%d:%d", at.Line, at.Column); got != tc.wantAt || msg != tc.wantMsg {
				t.Errorf("got %s %q\nwant %s %q", got, msg, tc.wantAt, tc.wantMsg)
			}
		})
	}
}

// Keywords runner does not know are annotations, as the specification
// says, and good schemas compile.
func TestGoodSchemas(t *testing.T) {
	for _, src := range []string{
		"type: object\nx-editor-hint: wide\nproperties:\n  a: {type: [string, 'null'], format: email, deprecated: true}\n",
		"true\n",
		"$schema: https://json-schema.org/draft/2020-12/schema\n$defs:\n  n: {type: integer, minimum: 0}\ntype: array\nitems: {$ref: '#/$defs/n'}\n",
		"type: array\nitems: [{type: string}, {type: integer}]\n",
	} {
		if _, _, err := compileYAML(t, src); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
}

// A value that does not match is reported in one line that names its
// place in the value and what is wrong there.
func TestBadValues(t *testing.T) {
	const defs = "$defs:\n  item: {type: object, required: [id], properties: {id: {type: integer}}}\n"
	tests := []struct {
		name, schema, value, want string
	}{
		{"wrong type", "type: object\nproperties:\n  count: {type: integer}\n", `{"count": "x"}`,
			"at '/count': got string, want integer"},
		{"string with newline", "properties:\n  n: {type: integer}\n", `{"n": "a: b\\nc"}`, "at '/n': got string, want integer"},
		{"type list", "properties:\n  a: {type: [integer, 'null']}\n", `{"a": true}`,
			"at '/a': got boolean, want integer or null"},
		{"missing", "type: object\nrequired: [a, b]\n", `{}`, "at '': missing properties 'a', 'b'"},
		{"missing one", "type: object\nrequired: [a, b]\n", `{"b": 1}`, "at '': missing property 'a'"},
		{"nested missing", "properties:\n  user: {required: [name]}\n", `{"user": {}}`, "at '/user': missing property 'name'"},
		{"minimum", "properties:\n  count: {minimum: 1}\n", `{"count": 0}`, "at '/count': minimum: got 0, want 1"},
		{"maximum", "maximum: 2.5\n", `3`, "at '': maximum: got 3, want 2.5"},
		{"minLength", "properties:\n  s: {minLength: 3}\n", `{"s": "ab"}`, "at '/s': minLength: got 2, want 3"},
		{"maxItems", "maxItems: 1\n", `[1, 2]`, "at '': maxItems: got 2, want 1"},
		{"enum", "properties:\n  c: {enum: [red, green]}\n", `{"c": "blue"}`, `at '/c': enum: got "blue", not one of the allowed values`},
		{"pattern", "properties:\n  id: {pattern: '^[a-z]+$'}\n", `{"id": "A1"}`, `at '/id': pattern: "A1" does not match "^[a-z]+$"`},
		{"additional", "properties: {a: {}}\nadditionalProperties: false\n", `{"a": 1, "z": 2, "b": 3}`, "at '': additional properties 'b', 'z' not allowed"},
		{"additional schema", "additionalProperties: {type: string}\n", `{"a": "x", "b": 2.5}`, "at '/b': got number, want string"},
		{"items index", "type: array\nitems: {type: object, properties: {n: {type: integer}}}\n", `[{"n": 1}, {"n": 2}, {"n": "three"}]`,
			"at '/2/n': got string, want integer"},
		{"prefixItems", "prefixItems: [{type: string}, {type: integer}]\n", `["a", "b"]`, "at '/1': got string, want integer"},
		{"ref into defs", defs + "type: array\nitems: {$ref: '#/$defs/item'}\n", `[{"id": 1}, {"id": "x"}]`,
			"at '/1/id': got string, want integer"},
		{"ref property", defs + "properties:\n  first: {$ref: '#/$defs/item'}\n", `{"first": {}}`,
			"at '/first': missing property 'id'"},
		{"allOf", "allOf:\n  - properties: {a: {type: string}}\n", `{"a": 1}`, "at '/a': got integer, want string"},
		{"anyOf", "properties:\n  v: {anyOf: [{type: string}, {type: integer}]}\n", `{"v": 1.5}`, "at '/v': anyOf: matches none of the alternatives"},
		{"deep path", "properties:\n  a:\n    properties:\n      b:\n        items: {type: string}\n", `{"a": {"b": ["x", 1]}}`, "at '/a/b/1': got integer, want string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, sch, err := compileYAML(t, tc.schema)
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
			if got := Message(err); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// Values as YAML decodes them (ints, non-string keys) validate like their
// JSON.
func TestYAMLValues(t *testing.T) {
	_, sch, err := compileYAML(t, "type: object\nproperties:\n  n: {type: integer}\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(map[any]any{"n": 3}); err != nil {
		t.Errorf("valid value rejected: %v", err)
	}
	if err := sch.Validate(map[string]any{"n": 3.5}); err == nil {
		t.Error("3.5 accepted as an integer")
	}
}

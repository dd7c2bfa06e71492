package jsonschema

import (
	"strings"
	"testing"
)

// Linking this package must not compile the drafts' meta-schemas at start-up
// (upstream did, in init, ~2.8 ms on every start of runner, even for
// `runner version`); the first Compile does, once.
func TestMetaSchemasCompiledOnFirstCompileOnly(t *testing.T) {
	drafts := []*Draft{Draft4, Draft6, Draft7, Draft2019, Draft2020}
	for _, d := range drafts {
		if d.sch != nil {
			t.Fatalf("draft %d's meta-schema was compiled before any schema was", d.version)
		}
	}

	doc, err := UnmarshalJSON(strings.NewReader(`{"type": "object", "required": ["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	c := NewCompiler()
	if err := c.AddResource("s.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range drafts {
		if d.sch == nil {
			t.Fatalf("draft %d's meta-schema is still not compiled after the first Compile", d.version)
		}
	}
	// The compiled schema works: the meta-schemas it was checked against
	// were loaded properly.
	if err := sch.Validate(map[string]any{}); err == nil {
		t.Fatal("an object without the required property validated")
	}
	if err := sch.Validate(map[string]any{"a": 1}); err != nil {
		t.Fatalf("a valid object was refused: %v", err)
	}
}

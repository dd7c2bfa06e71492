package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/planrunner/runner/internal/jsonschema"
	"gopkg.in/yaml.v3"
)

func compiledSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(planSchema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("plan.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("plan.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func yamlAsJSON(t *testing.T, src []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	out, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	return out
}

// Every plan that `runner validate` accepts is valid under the schema.
func TestSchemaAcceptsValidPlans(t *testing.T) {
	s := compiledSchema(t)
	plans, _ := filepath.Glob("../../examples/*/*.yaml")
	more, _ := filepath.Glob("testdata/*.yaml")
	for _, p := range append(plans, more...) {
		if filepath.Base(p) == "five-mistakes.yaml" || filepath.Base(p) == "answers.yaml" || filepath.Base(p) == "openai.yaml" {
			continue
		}
		src, _ := os.ReadFile(p)
		if err := s.Validate(yamlAsJSON(t, src)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func TestSchemaRejectsMistakes(t *testing.T) {
	s := compiledSchema(t)
	for _, src := range []string{
		"version: 1\nsteps:\n  - {label: a, type: command, rn: x}",
		"version: 1\nsteps:\n  - {label: Bad, type: command, run: x}",
		"version: 1\nsteps:\n  - {label: a, type: command, run: x, timeout: 10}",
		"version: 1\nstepz: []\nsteps: [{label: a, type: command, run: x}]",
		"version: 1\nsteps:\n  - {label: a, parallel: [{label: b, type: command, run: x}], run: y}",
	} {
		if err := s.Validate(yamlAsJSON(t, []byte(src))); err == nil {
			t.Errorf("schema accepted:\n%s", src)
		}
	}
}

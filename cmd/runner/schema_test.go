package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/planrunner/runner/internal/schemacheck"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/view/plandoc"
	"gopkg.in/yaml.v3"
)

// schemaBytes is the schema `runner schema` prints, generated from the
// built-in step types.
func schemaBytes(t *testing.T) []byte {
	t.Helper()
	b, err := plandoc.Schema(steps.Registry())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The committed plan.schema.json (what editors fetch by its $id) and
// docs/plan-reference.md are what the code generates; after changing a
// step type, rerun with -update (plandoc.RegenerateCommand).
func TestGeneratedFilesAreCurrent(t *testing.T) {
	ref, err := plandoc.Reference(steps.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		want []byte
	}{
		{"plan.schema.json", schemaBytes(t)},
		{filepath.Join("..", "..", "docs", "plan-reference.md"), ref},
	} {
		if *update {
			if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f.path, f.want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatalf("%v; regenerate: %s", err, plandoc.RegenerateCommand)
		}
		if !bytes.Equal(got, f.want) {
			t.Errorf("%s is stale: the step types describe something else; regenerate: %s", f.path, plandoc.RegenerateCommand)
		}
	}
}

// `runner schema` prints the generated schema, byte for byte.
func TestSchemaCommandPrintsGeneratedSchema(t *testing.T) {
	r := runCLI(t, "testdata", "schema")
	if r.code != 0 || r.stdout != string(schemaBytes(t)) {
		t.Fatalf("runner schema: exit %d, %d bytes (want the generated %d bytes); stderr %s", r.code, len(r.stdout), len(schemaBytes(t)), r.stderr)
	}
}

func compiledSchema(t *testing.T) *schemacheck.Schema {
	t.Helper()
	s, err := schemacheck.Compile("plan.schema.json", schemaBytes(t))
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
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
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

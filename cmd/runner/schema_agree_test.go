package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/steps"
)

// schemaDoc is the generated schema as plain JSON values.
func schemaDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(schemaBytes(t), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func defs(doc map[string]any, name string) map[string]any {
	d, _ := doc["$defs"].(map[string]any)[name].(map[string]any)
	return d
}

func propNames(m map[string]any) []string {
	props, _ := m["properties"].(map[string]any)
	var out []string
	for k := range props {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Every registered step type is in the schema, with exactly the fields its
// decoder reads: a type or field added to one and not the other fails here.
func TestSchemaKnowsEveryStepTypeAndField(t *testing.T) {
	doc := schemaDoc(t)
	step := defs(doc, "step")
	enum, _ := step["properties"].(map[string]any)["type"].(map[string]any)["enum"].([]any)
	inSchema := map[string]bool{}
	for _, e := range enum {
		inSchema[e.(string)] = true
	}
	reg := steps.Registry()
	for _, typ := range reg.Names() {
		if !inSchema[typ] {
			t.Errorf("step type %s is not in the schema's type enum", typ)
			continue
		}
		fields, err := engine.TypeFields(reg, typ)
		if err != nil {
			t.Fatal(err)
		}
		d := defs(doc, typ)
		if d == nil {
			t.Errorf("no $defs/%s in the schema", typ)
			continue
		}
		if got, want := strings.Join(propNames(d), " "), strings.Join(fields, " "); got != want {
			t.Errorf("%s: schema fields %q, loader fields %q", typ, got, want)
		}
	}
	// The common fields too.
	common := append([]string{"label", "type", "parallel", "max_concurrency", "fail_fast"}, plans.CommonStepFields...)
	sort.Strings(common)
	var uniq []string
	for i, c := range common {
		if i == 0 || c != common[i-1] {
			uniq = append(uniq, c)
		}
	}
	if got, want := strings.Join(propNames(step), " "), strings.Join(uniq, " "); got != want {
		t.Errorf("common step fields: schema %q, loader %q", got, want)
	}
}

// Every key in the schema says what it is and shows an example, so an
// editor's hover and completion are useful.
func TestSchemaDescribesEveryKey(t *testing.T) {
	var walk func(path string, v any)
	walk = func(path string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			if l, ok := v.([]any); ok {
				for _, x := range l {
					walk(path, x)
				}
			}
			return
		}
		if props, ok := m["properties"].(map[string]any); ok {
			for k, p := range props {
				pm, ok := p.(map[string]any)
				if !ok {
					continue // `true`: described where the field belongs
				}
				if pm["description"] == nil || pm["examples"] == nil {
					t.Errorf("%s.%s lacks a description or examples", path, k)
				}
				walk(path+"/properties/"+k, pm)
			}
		}
		for k, x := range m {
			switch k {
			case "properties": // walked above, each as a schema (a field may be named "properties")
			case "if": // a condition names keys, it does not define them
			case "examples", "enum", "const", "default": // data, not schemas
			default:
				walk(path+"/"+k, x)
			}
		}
	}
	walk("#", schemaDoc(t))
}

// Plans through both the loader and the schema: they agree on every
// example and testdata plan, and on a table of valid and invalid ones.
func TestSchemaAndLoaderAgree(t *testing.T) {
	s := compiledSchema(t)
	check := func(name string, src []byte) {
		t.Helper()
		_, lerr := engine.Compile(name, src, steps.Registry())
		serr := s.Validate(yamlAsJSON(t, src))
		if (lerr == nil) != (serr == nil) {
			t.Errorf("%s: loader says %v; schema says %v\n%s", name, lerr, serr, src)
		}
	}
	files, _ := filepath.Glob("../../examples/*/plan.yaml")
	more, _ := filepath.Glob("testdata/*.yaml")
	for _, p := range append(files, more...) {
		src, _ := os.ReadFile(p)
		if !strings.Contains(string(src), "steps:") {
			continue // not a plan (answers)
		}
		check(p, src)
	}
	for i, src := range []string{
		// valid
		"version: 1\nsteps:\n  - {label: a, type: command, run: echo}",
		"version: 1\nsteps:\n  - {label: g, parallel: [{label: a, type: command, run: x}], max_concurrency: 2, fail_fast: false}",
		"version: 1\nsteps:\n  - {label: a, type: command, run: x, retry: 3, timeout: 1m30s, continue_on_error: true}",
		"version: 1\nlimits: {max_steps: 5, timeout: 10m, max_tokens: 100}\nsteps:\n  - {label: a, type: board, op: write, key: k, value: {x: 1}, ttl: 10s}",
		"version: 1\nagents: {c: {provider: script, responses: [hi]}}\nsteps:\n  - {label: a, type: llm, agent: c, prompt: hi, output: json, schema: {type: object}}",
		"version: 1\nsteps:\n  - {label: a, type: test, framework: pytest}\n  - {label: b, type: branch, cases: [{when: steps.a.passed, goto: end}], default: fail}",
		"version: 1\nsteps:\n  - {label: a, type: board, op: read, key: k}",
		"version: 1\nagents: {c: {provider: script, responses: [hi]}}\nsteps:\n  - {label: a, type: llm, agent: c, prompt: hi, view: true, tools: [board]}",
		"version: 1\nsteps:\n  - {label: a, type: apply_diff, diff_file: f.patch, strip: 0, backup: false}",
		// invalid
		"version: 2\nsteps:\n  - {label: a, type: command, run: x}",
		"version: 1\nsteps:\n  - {label: a, type: command, rn: x}",
		"version: 1\nsteps:\n  - {label: Bad, type: command, run: x}",
		"version: 1\nsteps:\n  - {label: a, type: command, run: x, timeout: soon}",
		"version: 1\nsteps:\n  - {label: a, type: command, run: x, max_concurrency: 2}",
		"version: 1\nsteps:\n  - {label: a, type: command, run: x, fail_fast: true}",
		"version: 1\nsteps:\n  - {label: a, type: command, run: x, parallel: [{label: b, type: command, run: y}]}",
		"version: 1\nsteps:\n  - {label: a}",
		"version: 1\nsteps:\n  - {label: a, type: nosuch}",
		"version: 1\nsteps: []",
		"version: 1\nstepz: []\nsteps: [{label: a, type: command, run: x}]",
		"version: 1\nsteps:\n  - {label: a, type: board, op: burn, key: k}",
		"version: 1\nsteps:\n  - {label: a, type: test, framework: mocha}",
		"version: 1\nsteps:\n  - {label: a, type: board, op: read, key: k, value: v}",
		"version: 1\nsteps:\n  - {label: a, type: board, op: write, key: k}",
		"version: 1\nsteps:\n  - {label: a, type: apply_diff, diff_file: f.patch, strip: -1}",
		"version: 1\nsteps:\n  - {label: a, type: command, run: x, keep_background: yes}",
		"version: 1\nagents: {c: {provider: script, responses: [hi]}}\nsteps:\n  - {label: a, type: llm, agent: c, prompt: hi, tools: [web]}",
		"version: 1\nagents: {c: {provider: script, responses: [hi]}}\nsteps:\n  - {label: a, type: llm, agent: c, prompt: hi, output: yaml}",
		"version: 1\nagents: {c: {provider: script, responses: [hi]}}\nsteps:\n  - {label: a, type: coordinate, agents: [], prompt: hi}",
		"version: 1\nsteps:\n  - {label: a, type: input, prompt: go, form: {properties: {ok: {type: object}}}}",
		"version: 1\nagents: {c: {provider: gemini, model: m}}\nsteps:\n  - {label: a, type: command, run: x}",
		"version: 1\nlimits: {max_steps: 0}\nsteps:\n  - {label: a, type: command, run: x}",
		"version: 1\nsteps:\n  - {label: g, parallel: [{label: a, type: command, run: x}], max_concurrency: 0}",
	} {
		check(strings.Split(src, "\n")[1]+"#"+string(rune('0'+i%10)), []byte(src))
	}
}

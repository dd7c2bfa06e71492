package plandoc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/schemacheck"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/view/plandoc"
	"gopkg.in/yaml.v3"
)

// echo2 is a step type as a new one is written: one file with its Type,
// its TypeSpec, its Decode and its Run, and nothing anywhere else.
type echo2Type struct{}

type Echo2Result struct {
	Said string `json:"said"`
}

type echo2Step struct {
	text  *engine.Template
	times int
}

func (echo2Type) Name() string           { return "echo2" }
func (echo2Type) Result() any            { return Echo2Result{} }
func (echo2Type) Spec() *engine.TypeSpec { return &echo2Spec }

var echo2Spec = engine.TypeSpec{
	Doc: "Says its text a number of times. It exists to show that a step type is one file.",
	Fields: []engine.Field{
		{Name: "text", Kind: engine.KindTemplate, Required: true,
			Doc: "What to say; ${{ }} inserts values.", Examples: []any{"hello ${{ vars.who }}"}},
		{Name: "times", Kind: engine.KindInt, Default: 1, Schema: `{"minimum": 1}`,
			Doc: "How often to say it.", Examples: []any{3}},
	},
	Example: "- {label: greet, type: echo2, text: hello, times: 2}",
	Results: []engine.ResultField{{Name: "said", Doc: "Everything it said, one line each time."}},
}

func (echo2Type) Decode(d *engine.Decoder) engine.Step {
	s := &echo2Step{}
	if d.Required("text") {
		s.text = d.Template("text")
	}
	if s.times = d.Int("times", 1); s.times < 1 {
		d.Errorf(d.Node("times"), "times must be at least 1")
	}
	return s
}

func (s *echo2Step) Run(ctx context.Context, sc *engine.StepContext) (engine.Result, error) {
	text, err := sc.Eval(s.text)
	if err != nil {
		return engine.Result{}, err
	}
	said := strings.TrimSuffix(strings.Repeat(text+"\n", s.times), "\n")
	return engine.Result{Output: said, Fields: Echo2Result{Said: said}}, nil
}

// Describe is what a dry run shows.
func (s *echo2Step) Describe() string {
	return fmt.Sprintf("say %s (%d times)", s.text.Src, s.times)
}

// The acceptance test of "a new step type is one file": a type registered
// from a test package (in a registry of its own, no global touched) is in
// the generated schema, which accepts and refuses what the loader does,
// in the generated reference, and in the dry run.
func TestNewTypeIsOneFile(t *testing.T) {
	reg := engine.NewRegistry()
	steps.Register(reg)
	reg.Register(echo2Type{})
	if err := engine.CheckType(echo2Type{}); err != nil {
		t.Fatal(err)
	}

	schemaText, err := plandoc.Schema(reg)
	if err != nil {
		t.Fatal(err)
	}
	schema := compile(t, schemaText)
	for _, tc := range []struct {
		plan  string
		valid bool
	}{
		{"version: 1\nsteps:\n  - {label: a, type: echo2, text: hi, times: 2}", true},
		{"version: 1\nsteps:\n  - {label: a, type: echo2, text: hi}", true},
		{"version: 1\nsteps:\n  - {label: a, type: echo2, text: hi, tims: 2}", false},     // misspelt field
		{"version: 1\nsteps:\n  - {label: a, type: echo2, times: 2}", false},              // required field missing
		{"version: 1\nsteps:\n  - {label: a, type: echo2, text: hi, times: many}", false}, // wrong kind
		{"version: 1\nsteps:\n  - {label: a, type: echo2, text: hi, run: x}", false},      // another type's field
		{"version: 1\nsteps:\n  - {label: a, type: command, run: x, text: hi}", false},    // and the other way round
	} {
		serr := schema.Validate(yamlJSON(t, tc.plan))
		_, lerr := engine.Compile("p.yaml", []byte(tc.plan), reg)
		if (serr == nil) != tc.valid || (lerr == nil) != tc.valid {
			t.Errorf("%s\nschema says %v, loader says %v; want valid=%v", tc.plan, serr, lerr, tc.valid)
		}
	}
	if builtin, _ := plandoc.Schema(steps.Registry()); bytes.Contains(builtin, []byte("echo2")) {
		t.Error("registering in a registry of its own changed the built-in schema")
	}

	ref, err := plandoc.Reference(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| [echo2](#echo2) | Says its text a number of times. |",
		"## echo2\n\nSays its text a number of times. It exists to show that a step type is one file.\n",
		"| `text` | template | yes |  | What to say; ${{ }} inserts values. | `hello ${{ vars.who }}` |",
		"| `times` | integer |  | `1` | How often to say it. | `3` |",
		"```yaml\n- {label: greet, type: echo2, text: hello, times: 2}\n```",
		"| `said` | string | Everything it said, one line each time. |",
	} {
		if !strings.Contains(string(ref), want) {
			t.Errorf("the reference lacks %q", want)
		}
	}

	prog, err := engine.Compile("p.yaml", []byte("version: 1\nsteps:\n  - {label: a, type: echo2, text: hi, times: 2}\n"), reg)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := engine.DryRun(&out, prog, nil); err != nil {
		t.Fatal(err)
	}
	if want := "1. a (echo2)\n     say hi (2 times)\n"; !strings.Contains(out.String(), want) {
		t.Errorf("dry run:\n%s\nwant it to show %q", out.String(), want)
	}
}

// Every built-in type's example, the one the reference shows, is valid
// under the generated schema (steps' tests check that it loads).
func TestExamplesFitTheSchema(t *testing.T) {
	reg := steps.Registry()
	text, err := plandoc.Schema(reg)
	if err != nil {
		t.Fatal(err)
	}
	schema := compile(t, text)
	for _, name := range reg.Names() {
		typ, _ := reg.Lookup(name)
		spec := engine.SpecOf(typ)
		if spec == nil {
			t.Errorf("%s has no spec", name)
			continue
		}
		if err := schema.Validate(yamlJSON(t, engine.ExamplePlan(spec.Example))); err != nil {
			t.Errorf("%s: its example is not valid under the schema: %v", name, err)
		}
	}
}

// A spec the generator cannot turn into a schema is an error naming the
// type and field, not a panic or a silently loose schema.
func TestBadSpecIsAnError(t *testing.T) {
	for _, tc := range []struct {
		field engine.Field
		want  string
	}{
		{engine.Field{Name: "x", Kind: "colour", Doc: "X.", Examples: []any{1}}, `step type bad: field x: unknown kind "colour"`},
		{engine.Field{Name: "x", Kind: engine.KindOther, Doc: "X.", Examples: []any{1}}, "step type bad: field x: kind other needs a Schema"},
		{engine.Field{Name: "x", Kind: engine.KindInt, Schema: `{"minimum": `, Doc: "X.", Examples: []any{1}}, "field x: Schema"},
	} {
		reg := engine.NewRegistry()
		reg.Register(badType{tc.field})
		if _, err := plandoc.Schema(reg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.field, err, tc.want)
		}
	}
}

type badType struct{ f engine.Field }

func (badType) Name() string { return "bad" }
func (badType) Result() any  { return struct{}{} }
func (b badType) Spec() *engine.TypeSpec {
	return &engine.TypeSpec{Doc: "Bad.", Fields: []engine.Field{b.f}}
}
func (badType) Decode(d *engine.Decoder) engine.Step { return nil }

func compile(t *testing.T, text []byte) *schemacheck.Schema {
	t.Helper()
	s, err := schemacheck.Compile("plan.schema.json", text)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func yamlJSON(t *testing.T, src string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(src), &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

package engine

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/planrunner/runner/internal/plans"
)

// A TypeSpec describes a step type for people and tools: what it does,
// each of its fields, an example step and its result fields. The plan's
// JSON Schema (`runner schema`), the plan reference (docs/plan-reference.md)
// are generated from it (package plandoc), and the Decoder reads it: a
// type may only read the fields it describes, Enum takes its allowed values
// from it, and CheckType (run over every built-in type by a test) fails
// when Decode reads a different set of fields than the spec lists. So a new
// step type is one file: its Type, its TypeSpec, its Decode and Run.
//
// A spec is a package-level value built once; nothing here runs at
// start-up beyond Go's own initialisation of it.
type TypeSpec struct {
	// Doc says what the type does, in full sentences; the first sentence
	// is the summary shown in lists.
	Doc string
	// Fields are the type's own fields beside the common ones (label,
	// type, if, timeout, retry, ...), in the order the reference shows them.
	Fields []Field
	// Example is a YAML list of one or more steps showing the type in use.
	// A test compiles it (with script agents named coder, reviewer, planner
	// and lead), so it cannot go stale.
	Example string
	// Results describe the type's result fields (the `json` names of
	// Type.Result()), read as steps.<label>.<name>. A test checks that
	// every result field is described and nothing else.
	Results []ResultField
	// Schema is extra JSON Schema (a JSON object, merged into the type's
	// part of the plan schema) for rules between fields, such as "value
	// only with op: write". Optional.
	Schema string
}

// A Field is one field of a step type.
type Field struct {
	Name     string
	Kind     Kind
	Required bool
	// Default is the value taken when the field is absent, when that is a
	// plain value (it goes to the schema's `default`); nil when there is
	// none or it depends (say so in Doc). The Decoder checks that the
	// default Decode passes agrees.
	Default any
	// Enum, for KindEnum, is the values allowed; Decoder.Enum uses them.
	Enum []string
	// Doc says what the field does, in a sentence or two.
	Doc string
	// Examples are values of the field as they would be written in YAML
	// (Go strings, numbers, bools, []any, map[string]any).
	Examples []any
	// Schema is the field's JSON Schema (a JSON object) where Kind alone
	// does not say it: its keys are merged over the ones Kind gives
	// ("minimum", "items", ...); a field of a Kind without a schema of its
	// own (KindOther) must give all of it.
	Schema string
}

// Kind is what a field holds.
type Kind string

// The kinds of fields. A field of KindTemplate or KindShell may hold
// ${{ }}; one of KindString may not.
const (
	KindString   Kind = "string"   // plain text (Decoder.String)
	KindTemplate Kind = "template" // text with ${{ }} (Decoder.Template)
	KindValue    Kind = "value"    // text, number or boolean; a whole ${{ }} keeps its type (Decoder.Template)
	KindShell    Kind = "shell"    // a shell script with ${{ }} passed as data (Decoder.ShellTemplate)
	KindEnum     Kind = "enum"     // one of Enum (Decoder.Enum)
	KindInt      Kind = "integer"  // a whole number (Decoder.Int)
	KindBool     Kind = "boolean"  // true or false (Decoder.Bool)
	KindDuration Kind = "duration" // a Go duration such as 30s or 5m (Decoder.Duration)
	KindEnv      Kind = "env"      // a mapping of environment variables to templates (Decoder.Env)
	KindList     Kind = "list"     // a list of strings (Decoder.Node)
	KindMapping  Kind = "mapping"  // a mapping (Decoder.Node)
	KindOther    Kind = "other"    // anything else: Schema says what (Decoder.Node)
)

// Kinds lists every kind, in the order the reference explains them.
func Kinds() []Kind {
	return []Kind{KindString, KindTemplate, KindValue, KindShell, KindEnum, KindInt, KindBool,
		KindDuration, KindEnv, KindList, KindMapping, KindOther}
}

// Doc says what a field of kind k holds, for the reference.
func (k Kind) Doc() string {
	switch k {
	case KindString:
		return "Plain text, taken as written (no ${{ }})."
	case KindTemplate:
		return "Text in which ${{ expression }} inserts a value when the step runs."
	case KindValue:
		return "Text with ${{ }}, a number or a boolean; a value that is one whole ${{ }} keeps the expression's type."
	case KindShell:
		return "A shell script with ${{ }}: each value reaches the script in an environment variable, as data, never as shell syntax."
	case KindEnum:
		return "One of the listed words."
	case KindInt:
		return "A whole number."
	case KindBool:
		return "true or false."
	case KindDuration:
		return "A duration such as 30s, 5m, 1h30m or 250ms."
	case KindEnv:
		return "A mapping of environment variable names to templates."
	case KindList:
		return "A list (of strings unless the field says otherwise)."
	case KindMapping:
		return "A mapping; the field says of what."
	case KindOther:
		return "What the field's description says."
	}
	return ""
}

// ResultField describes one field of a type's result.
type ResultField struct {
	Name string
	Doc  string
}

// Specified is implemented by a Type that describes itself. Every built-in
// type does; a type without a spec still loads, but has no part in the
// schema or the reference.
type Specified interface {
	Spec() *TypeSpec
}

// Describer is implemented by a Step that says what it would do, for
// `runner run --dry-run` (see DryRun): one or more lines, such as the
// script a command would run.
type Describer interface {
	Describe() string
}

// SpecOf returns t's spec, or nil when t has none.
func SpecOf(t Type) *TypeSpec {
	if s, ok := t.(Specified); ok {
		return s.Spec()
	}
	return nil
}

// Field returns the field named name, or nil.
func (s *TypeSpec) Field(name string) *Field {
	if s == nil {
		return nil
	}
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// Names lists the fields' names in the spec's order.
func (s *TypeSpec) Names() []string {
	out := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		out[i] = f.Name
	}
	return out
}

// Summary is the first sentence of Doc.
func (s *TypeSpec) Summary() string {
	doc := strings.Join(strings.Fields(s.Doc), " ")
	if i := strings.Index(doc, ". "); i >= 0 {
		return doc[:i+1]
	}
	return doc
}

// accessorKinds are the kinds each Decoder accessor reads (a switch, not
// a map, so start-up builds nothing); Node reads any kind.
func accessorKinds(accessor string) []Kind {
	switch accessor {
	case "String":
		return []Kind{KindString}
	case "Template":
		return []Kind{KindTemplate, KindValue}
	case "ShellTemplate":
		return []Kind{KindShell}
	case "Enum":
		return []Kind{KindEnum}
	case "Int":
		return []Kind{KindInt}
	case "Bool":
		return []Kind{KindBool}
	case "Duration":
		return []Kind{KindDuration}
	case "Env":
		return []Kind{KindEnv}
	}
	return nil
}

// ResultNames lists the json names of t's result fields, in struct order.
func ResultNames(t Type) []string {
	rt := reflect.TypeOf(t.Result())
	if rt == nil {
		return nil
	}
	rt = indirect(rt)
	var out []string
	for i := 0; i < rt.NumField(); i++ {
		if name, ok := jsonName(rt.Field(i)); ok {
			out = append(out, name)
		}
	}
	return out
}

// ResultKind names the kind of result field name of t, for the reference:
// string, integer, number, boolean, list or mapping.
func ResultKind(t Type, name string) string {
	rt := reflect.TypeOf(t.Result())
	if rt == nil {
		return ""
	}
	rt = indirect(rt)
	for i := 0; i < rt.NumField(); i++ {
		if n, ok := jsonName(rt.Field(i)); ok && n == name {
			return kindOfGo(rt.Field(i).Type)
		}
	}
	return ""
}

func kindOfGo(t reflect.Type) string {
	t = indirect(t)
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.Map, reflect.Struct:
		if t == timeType {
			return "string"
		}
		return "mapping"
	}
	return "any"
}

// CheckType says what is wrong with t's description, or nil: a spec must
// exist, describe each field with a kind, a doc and an example, describe
// every result field, and list exactly the fields Decode reads. Run it
// over every registered type in a test (steps does).
func CheckType(t Type) error {
	spec := SpecOf(t)
	if spec == nil {
		return fmt.Errorf("step type %s: no TypeSpec (implement Spec() *engine.TypeSpec)", t.Name())
	}
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if strings.TrimSpace(spec.Doc) == "" {
		bad("no Doc")
	}
	if strings.TrimSpace(spec.Example) == "" {
		bad("no Example")
	}
	seen := map[string]bool{}
	for _, f := range spec.Fields {
		switch {
		case f.Name == "":
			bad("a field without a name")
		case seen[f.Name]:
			bad("field %s described twice", f.Name)
		case slices.Contains(plans.CommonStepFields, f.Name):
			bad("field %s is a common step field", f.Name)
		}
		seen[f.Name] = true
		if f.Doc == "" || len(f.Examples) == 0 {
			bad("field %s needs a Doc and Examples", f.Name)
		}
		if f.Kind == "" || (f.Kind == KindOther && f.Schema == "") {
			bad("field %s needs a Kind (or KindOther with a Schema)", f.Name)
		}
		if (f.Kind == KindEnum) != (len(f.Enum) > 0) {
			bad("field %s: Enum goes with KindEnum", f.Name)
		}
	}
	results := ResultNames(t)
	var described []string
	for _, r := range spec.Results {
		described = append(described, r.Name)
		if r.Doc == "" {
			bad("result field %s has no Doc", r.Name)
		}
	}
	if a, b := sorted(results), sorted(described); !slices.Equal(a, b) {
		bad("result fields %v, described %v", a, b)
	}
	// What Decode reads of an empty step is what the spec lists.
	read, problems, err := decodeEmpty(t)
	if err != nil {
		return err
	}
	for _, p := range problems {
		if strings.Contains(p, "TypeSpec") {
			bad("%s", p)
		}
	}
	if a, b := sorted(read), sorted(spec.Names()); !slices.Equal(a, b) {
		bad("Decode reads %v, the spec describes %v", a, b)
	}
	if len(errs) > 0 {
		return fmt.Errorf("step type %s: %s", t.Name(), strings.Join(errs, "; "))
	}
	return nil
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// decodeEmpty decodes a step of type t that has none of its fields, and
// returns the fields Decode asked for and the problems it reported.
func decodeEmpty(t Type) ([]string, []string, error) {
	p, err := plans.Parse("fields.yaml", []byte("version: 1\nsteps:\n  - {label: x, type: "+t.Name()+"}\n"))
	if p == nil {
		return nil, nil, err
	}
	r := &plans.Reporter{}
	reg := NewRegistry()
	reg.Register(t)
	d := newDecoder(p, p.Steps[0], r, planScope(p, reg, nil))
	d.spec = SpecOf(t)
	t.Decode(d)
	seen := map[string]bool{}
	var read []string
	for _, k := range d.known {
		if !seen[k] {
			seen[k] = true
			read = append(read, k)
		}
	}
	var problems []string
	for _, e := range r.List {
		problems = append(problems, e.Msg)
	}
	return read, problems, nil
}

// ExampleAgents are the agents a TypeSpec's Example may name.
var ExampleAgents = []string{"coder", "reviewer", "planner", "lead"}

// ExamplePlan is a whole plan around steps, a TypeSpec's Example: what a
// test compiles to show the example loads. Its agents are ExampleAgents,
// with canned answers.
func ExamplePlan(steps string) string {
	var b strings.Builder
	b.WriteString("version: 1\nagents:\n")
	for _, a := range ExampleAgents {
		fmt.Fprintf(&b, "  %s: {provider: script, responses: [ok]}\n", a)
	}
	b.WriteString("steps:\n")
	for _, line := range strings.Split(strings.TrimSpace(steps), "\n") {
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}

// CommonResultNames are the fields every step's result has beside its
// type's, read as steps.<label>.<name>.
func CommonResultNames() []string {
	out := make([]string, 0, len(commonStateTypes))
	for k := range commonStateTypes {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

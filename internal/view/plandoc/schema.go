// Package plandoc generates what is written about plans from the step
// types themselves: the plan's JSON Schema (Schema, printed by `runner
// schema`) and the plan reference (Reference, docs/plan-reference.md).
// The plan's own keys and the common step fields are in base.schema.json;
// each registered type adds its part from its engine.TypeSpec, so a new
// type needs no edit here.
package plandoc

import (
	_ "embed"
	"fmt"

	"github.com/planrunner/runner/internal/engine"
)

// baseSchema is the plan schema without the step types' parts.
//
//go:embed base.schema.json
var baseSchema string

// Schema returns the JSON Schema of plans whose steps are of reg's types.
func Schema(reg *engine.Registry) ([]byte, error) {
	doc, err := schemaDoc(reg)
	if err != nil {
		return nil, err
	}
	return indent(doc)
}

func schemaDoc(reg *engine.Registry) (*object, error) {
	doc, err := parseObject(baseSchema, "base.schema.json")
	if err != nil {
		return nil, err
	}
	defs := doc.obj("$defs")
	step := defs.obj("step")
	names := reg.Names()
	enum := make([]any, len(names))
	for i, n := range names {
		enum[i] = n
	}
	step.obj("properties").obj("type").set("enum", enum)
	allOf, _ := step.get("allOf").([]any)
	for _, name := range names {
		t, _ := reg.Lookup(name)
		if defs.get(name) != nil {
			return nil, fmt.Errorf("step type %s: its name is taken in the schema's $defs", name)
		}
		def, err := typeDef(t)
		if err != nil {
			return nil, err
		}
		defs.set(name, def)
		allOf = append(allOf, ifType(name))
	}
	step.set("allOf", allOf)
	return doc, nil
}

// ifType applies $defs/<name> to steps of type name.
func ifType(name string) *object {
	cond := newObject()
	typ := newObject()
	typ.set("const", name)
	props := newObject()
	props.set("type", typ)
	cond.set("properties", props)
	cond.set("required", []any{"type"})
	ref := newObject()
	ref.set("$ref", "#/$defs/"+name)
	o := newObject()
	o.set("if", cond)
	o.set("then", ref)
	return o
}

// typeDef is the schema of a type's own fields. The step's
// unevaluatedProperties refuses any other; a type without a spec allows
// anything, as its decoder alone knows its fields.
func typeDef(t engine.Type) (*object, error) {
	def := newObject()
	spec := engine.SpecOf(t)
	if spec == nil {
		def.set("additionalProperties", true)
		return def, nil
	}
	def.set("description", spec.Doc)
	var required []any
	props := newObject()
	for _, f := range spec.Fields {
		fs, err := fieldSchema(f)
		if err != nil {
			return nil, fmt.Errorf("step type %s: %v", t.Name(), err)
		}
		props.set(f.Name, fs)
		if f.Required {
			required = append(required, f.Name)
		}
	}
	if len(required) > 0 {
		def.set("required", required)
	}
	def.set("properties", props)
	if spec.Schema != "" {
		extra, err := parseObject(spec.Schema, "step type "+t.Name()+": Schema")
		if err != nil {
			return nil, err
		}
		def.merge(extra)
	}
	return def, nil
}

// fieldSchema is a field's schema: what its Kind says, its Schema over
// that, then its default, description and examples.
func fieldSchema(f engine.Field) (*object, error) {
	s := newObject()
	switch f.Kind {
	case engine.KindString, engine.KindTemplate:
		s.set("type", "string")
	case engine.KindValue, engine.KindShell:
		s.set("$ref", "#/$defs/template") // a number or boolean is text too
	case engine.KindEnum:
		enum := make([]any, len(f.Enum))
		for i, e := range f.Enum {
			enum[i] = e
		}
		s.set("enum", enum)
	case engine.KindInt:
		s.set("type", "integer")
	case engine.KindBool:
		s.set("type", "boolean")
	case engine.KindDuration:
		s.set("$ref", "#/$defs/duration")
	case engine.KindEnv:
		s.set("$ref", "#/$defs/env")
	case engine.KindList:
		s.set("type", "array")
		items := newObject()
		items.set("type", "string")
		s.set("items", items)
	case engine.KindMapping:
		s.set("type", "object")
	case engine.KindOther:
		if f.Schema == "" {
			return nil, fmt.Errorf("field %s: kind other needs a Schema", f.Name)
		}
	default:
		return nil, fmt.Errorf("field %s: unknown kind %q", f.Name, f.Kind)
	}
	if f.Schema != "" {
		extra, err := parseObject(f.Schema, "field "+f.Name+": Schema")
		if err != nil {
			return nil, err
		}
		s.merge(extra)
	}
	if f.Default != nil {
		s.set("default", f.Default)
	}
	s.set("description", f.Doc)
	s.set("examples", f.Examples)
	return s, nil
}

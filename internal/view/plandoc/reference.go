package plandoc

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/planrunner/runner/internal/engine"
)

// RegenerateCommand is the one line that rewrites the generated files
// (docs/plan-reference.md, cmd/runner/plan.schema.json) from the code.
const RegenerateCommand = "go test ./cmd/runner -run TestGeneratedFilesAreCurrent -update"

// Reference returns the plan reference, a markdown page: the plan's keys,
// the common step fields, then one section per step type of reg with what
// it does, its fields, an example and its result fields.
func Reference(reg *engine.Registry) ([]byte, error) {
	doc, err := schemaDoc(reg)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# Plan reference\n\n")
	fmt.Fprintf(&b, "<!-- Generated from the step types' descriptions (engine.TypeSpec) and plandoc/base.schema.json; do not edit. Regenerate: %s -->\n\n", RegenerateCommand)
	b.WriteString("A plan is a YAML file of labeled steps run top to bottom against a blackboard. " +
		"`runner validate` checks a plan; `runner schema` prints the JSON Schema this page is generated with.\n\n")

	b.WriteString("## Plan keys\n\n")
	keyTable(&b, doc, doc.get("required"))

	step := doc.obj("$defs").obj("step")
	b.WriteString("## Common step fields\n\n")
	b.WriteString("Every step may have these; a step has either a `type` (and the fields of its type, below) or `parallel`; a child of a group may have `steps` instead (a sequence).\n\n")
	keyTable(&b, step, step.get("required"))
	fmt.Fprintf(&b, "Every step's result, read in expressions as `steps.<label>.<field>`, has %s, and the fields of its type.\n\n",
		codeList(engine.CommonResultNames()))

	b.WriteString("## Kinds of fields\n\n| kind | what it holds |\n| --- | --- |\n")
	for _, k := range engine.Kinds() {
		fmt.Fprintf(&b, "| %s | %s |\n", k, cell(k.Doc()))
	}
	b.WriteString("\n## Step types\n\n| type | what it does |\n| --- | --- |\n")
	for _, name := range reg.Names() {
		t, _ := reg.Lookup(name)
		summary := "(not described)"
		if spec := engine.SpecOf(t); spec != nil {
			summary = spec.Summary()
		}
		fmt.Fprintf(&b, "| [%s](#%s) | %s |\n", name, name, cell(summary))
	}
	b.WriteString("\n")
	for _, name := range reg.Names() {
		t, _ := reg.Lookup(name)
		typeSection(&b, t)
	}
	return b.Bytes(), nil
}

func typeSection(b *bytes.Buffer, t engine.Type) {
	fmt.Fprintf(b, "## %s\n\n", t.Name())
	spec := engine.SpecOf(t)
	if spec == nil {
		b.WriteString("This type does not describe itself (it has no engine.TypeSpec).\n\n")
		return
	}
	b.WriteString(cell(spec.Doc) + "\n\n")
	if len(spec.Fields) > 0 {
		b.WriteString("| field | kind | required | default | description | example |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, f := range spec.Fields {
			req, def := "", ""
			if f.Required {
				req = "yes"
			}
			if f.Default != nil {
				def = code(f.Default)
			}
			ex := ""
			if len(f.Examples) > 0 {
				ex = code(f.Examples[0])
			}
			fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | %s |\n", f.Name, kindText(f), req, def, cell(f.Doc), ex)
		}
		b.WriteString("\n")
	}
	if spec.Example != "" {
		fmt.Fprintf(b, "```yaml\n%s\n```\n\n", strings.TrimSpace(spec.Example))
	}
	if len(spec.Results) > 0 {
		fmt.Fprintf(b, "Result fields, read as `steps.<label>.<field>`:\n\n| field | kind | description |\n| --- | --- | --- |\n")
		for _, r := range spec.Results {
			fmt.Fprintf(b, "| `%s` | %s | %s |\n", r.Name, engine.ResultKind(t, r.Name), cell(r.Doc))
		}
		b.WriteString("\n")
	}
}

// keyTable lists the properties of a schema object.
func keyTable(b *bytes.Buffer, o *object, required any) {
	req := map[string]bool{}
	if list, ok := required.([]any); ok {
		for _, r := range list {
			req[fmt.Sprint(r)] = true
		}
	}
	props := o.obj("properties")
	b.WriteString("| key | required | description | example |\n| --- | --- | --- | --- |\n")
	for _, k := range props.keys {
		p, _ := props.vals[k].(*object)
		if p == nil {
			continue
		}
		r := ""
		if req[k] {
			r = "yes"
		}
		desc, _ := p.get("description").(string)
		ex := ""
		if list, ok := p.get("examples").([]any); ok && len(list) > 0 {
			ex = code(list[0])
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", k, r, cell(desc), ex)
	}
	b.WriteString("\n")
}

// kindText is a field's kind as the reference shows it.
func kindText(f engine.Field) string {
	switch f.Kind {
	case engine.KindEnum:
		return "one of " + codeList(f.Enum)
	case engine.KindList:
		if o, err := parseObject(f.Schema, f.Name); err == nil && o.obj("items") != nil {
			return "list of " + schemaKind(o.obj("items")) + "s"
		}
		return "list of strings"
	case engine.KindOther:
		if o, err := parseObject(f.Schema, f.Name); err == nil {
			if alts, ok := o.get("oneOf").([]any); ok {
				var kinds []string
				for _, a := range alts {
					if ao, ok := a.(*object); ok {
						kinds = append(kinds, schemaKind(ao))
					}
				}
				return strings.Join(kinds, " or ")
			}
			return schemaKind(o)
		}
	}
	return string(f.Kind)
}

func schemaKind(o *object) string {
	if o.get("enum") != nil {
		return "word"
	}
	switch o.get("type") {
	case "object":
		return "mapping"
	case "array":
		return "list"
	case nil:
		return "any"
	default:
		return fmt.Sprint(o.get("type"))
	}
}

// code shows a value as YAML users write it: a plain string as itself,
// anything else (or a string with a line break) as JSON, which YAML reads.
func code(v any) string {
	if s, ok := v.(string); ok && !strings.ContainsAny(s, "\n`|") {
		return "`" + s + "`"
	}
	j, err := marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return "`" + strings.ReplaceAll(string(j), "|", "\\|") + "`"
}

func codeList(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "`" + n + "`"
	}
	return strings.Join(out, ", ")
}

// cell makes text safe in a markdown table cell: one line, no column
// breaks, and steps.<label> shown rather than taken for an HTML tag.
func cell(s string) string {
	parts := strings.Split(strings.Join(strings.Fields(s), " "), "`")
	for i := range parts {
		if i%2 == 0 { // outside `code`, where < starts a tag
			parts[i] = strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(parts[i])
		}
		parts[i] = strings.ReplaceAll(parts[i], "|", "\\|")
	}
	return strings.Join(parts, "`")
}

// Package schemacheck compiles the JSON Schemas that plans and MCP
// servers give (a tool's parameters, an llm step's answer schema, an
// assertion's schema), checks the schema itself, and words schema and
// validation errors in one line, pointing into the plan's YAML where the
// schema came from or into the value that did not match. It is the only
// package that imports a JSON Schema library (github.com/google/jsonschema-go,
// chosen because its init is cheap and the MCP SDK links it anyway). It may
// import plans and third-party packages, not the engine, the steps or the
// agents, which all use it.
package schemacheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/planrunner/runner/internal/plans"
	"gopkg.in/yaml.v3"
)

// Schema is a checked, resolved JSON Schema ready to validate values.
type Schema struct {
	raw      any // the schema as decoded JSON, to find sub-schemas for messages
	resolved *jsonschema.Resolved
}

// Compile checks and compiles the schema in raw. url names it in errors
// that are not about one of its places (an unresolved $ref).
func Compile(url string, raw []byte) (*Schema, error) {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if err := checkSchema(doc, nil); err != nil {
		return nil, err
	}
	res, err := resolve(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return &Schema{raw: doc, resolved: res}, nil
}

func resolve(raw []byte) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

// Validate checks v (a value as encoding/json or YAML decodes it) against
// the schema. Its error says in one line where in v and what is wrong.
func (s *Schema) Validate(v any) error {
	// A JSON round trip gives the library the plain maps, slices, strings,
	// float64s and bools it validates (YAML gives ints, callers structs).
	b, err := json.Marshal(JSONValue(v))
	if err != nil {
		return fmt.Errorf("not a JSON value: %w", err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("not a JSON value: %w", err)
	}
	verr := s.resolved.Validate(doc)
	if verr == nil {
		return nil
	}
	return s.explain(doc, verr)
}

// Message is a validation error in one line.
func Message(err error) string {
	return firstLine(strings.TrimSpace(err.Error()))
}

// SchemaError is a mistake in a schema itself, at a JSON Pointer into it.
type SchemaError struct {
	Path []string // keys and indexes from the schema's root
	Msg  string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("at '%s': %s (not a valid JSON Schema)", pointer(e.Path), e.Msg)
}

// ValueError is a value that does not match a schema, at a JSON Pointer
// into the value.
type ValueError struct {
	Path []string
	Msg  string
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("at '%s': %s", pointer(e.Path), e.Msg)
}

func pointer(path []string) string {
	var b strings.Builder
	for _, seg := range path {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(seg))
	}
	return b.String()
}

// Problem finds where in the schema mapping n a compile error points, and
// says it in one line.
func Problem(n *yaml.Node, err error) (*yaml.Node, string) {
	var se *SchemaError
	if errors.As(err, &se) {
		at := n
		for _, seg := range se.Path {
			next := Child(at, seg)
			if next == nil {
				break
			}
			at = next
		}
		return at, se.Error()
	}
	return n, firstLine(err.Error())
}

// Child steps into a mapping key or a sequence index (nil: none).
func Child(n *yaml.Node, seg string) *yaml.Node {
	n = plans.Resolve(n)
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == seg {
				return n.Content[i+1]
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i]
		}
	}
	return nil
}

// JSONValue turns YAML-decoded values into ones encoding/json accepts
// (YAML allows non-string mapping keys), in place where it can.
func JSONValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = JSONValue(x)
		}
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[fmt.Sprint(k)] = JSONValue(x)
		}
		return out
	case []any:
		for i, x := range t {
			t[i] = JSONValue(x)
		}
	}
	return v
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

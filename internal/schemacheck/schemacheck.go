// Package schemacheck compiles the JSON Schemas that plans and MCP
// servers give (a tool's parameters, an llm step's answer schema, an
// assertion's schema) and words their errors in one line, pointing into
// the plan's YAML where the schema came from. It may import plans and
// third-party packages, not the engine, the steps or the agents, which
// all use it.
package schemacheck

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/planrunner/runner/internal/plans"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// Compile compiles the schema in raw. url names it in errors that are
// not about one of its places (an unresolved $ref).
func Compile(url string, raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// Problem finds where in the schema mapping n a compile error points, and
// says it in one line.
func Problem(n *yaml.Node, err error) (*yaml.Node, string) {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			for len(ve.Causes) > 0 {
				ve = ve.Causes[0]
			}
			at := n
			for _, seg := range ve.InstanceLocation {
				next := Child(at, seg)
				if next == nil {
					break
				}
				at = next
			}
			return at, firstLine(strings.TrimSpace(ve.Error())) + " (not a valid JSON Schema)"
		}
	}
	return n, firstLine(err.Error())
}

// Message is a validation error in one line, without its header line
// (which names the schema's internal URL).
func Message(err error) string {
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	if len(lines) > 1 && strings.HasPrefix(lines[0], "jsonschema validation failed") {
		lines = lines[1:]
	}
	for i := range lines {
		lines[i] = strings.TrimPrefix(strings.TrimSpace(lines[i]), "- ")
	}
	return strings.Join(lines, "; ")
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

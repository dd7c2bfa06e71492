package plans

import (
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	"gopkg.in/yaml.v3"
)

// Field is one key: value pair of a YAML mapping.
type Field struct {
	Key   string
	KeyN  *yaml.Node
	Value *yaml.Node
}

// Fields returns a mapping's pairs in order. A node that is not a mapping,
// or a key given twice, is reported; what remains is still returned so that
// checking can go on.
func Fields(r *Reporter, n *yaml.Node, what string) []Field {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		if n != nil && !(n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
			r.At(n, "%s must be a mapping, got %s", what, KindName(n))
		}
		return nil
	}
	out := make([]Field, 0, len(n.Content)/2)
	// Keys given twice are found by looking through out, for the small
	// mappings a plan is mostly made of (a map per step's mapping was a
	// tenth of a large plan's allocations); a large mapping uses a map.
	var seen map[string]bool
	if len(n.Content) > 2*smallMapping {
		seen = make(map[string]bool, len(n.Content)/2)
	}
	given := func(key string) bool {
		if seen != nil {
			return seen[key]
		}
		return fieldMap(out).has(key)
	}
	note := func(f Field) {
		if seen != nil {
			seen[f.Key] = true
		}
		out = append(out, f)
	}
	var merged []Field
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			r.At(k, "%s: keys must be plain strings", what)
			continue
		}
		if k.Tag == "!!merge" {
			merged = append(merged, mergeFields(r, v, what)...)
			continue
		}
		if given(k.Value) {
			r.At(k, "%s: %q is given twice", what, k.Value)
			continue
		}
		note(Field{Key: k.Value, KeyN: k, Value: v})
	}
	// `<<: *defaults` adds the keys the mapping does not give itself.
	if len(merged) > 0 && seen == nil && len(out)+len(merged) > smallMapping {
		seen = make(map[string]bool, len(out)+len(merged))
		for _, f := range out {
			seen[f.Key] = true
		}
	}
	for _, f := range merged {
		if !given(f.Key) {
			note(f)
		}
	}
	return out
}

// smallMapping is the most pairs a mapping may have for Fields to find
// keys given twice without a map.
const smallMapping = 16

// mergeFields reads the value of a `<<` merge key: a mapping, or a list of
// mappings where earlier ones win.
func mergeFields(r *Reporter, v *yaml.Node, what string) []Field {
	v = Resolve(v)
	if v != nil && v.Kind == yaml.SequenceNode {
		var out []Field
		for _, m := range v.Content {
			out = append(out, Fields(r, m, what+": <<")...)
		}
		return out
	}
	if v == nil || v.Kind != yaml.MappingNode {
		r.At(v, "%s: << merges a mapping (or a list of mappings), got %s", what, KindName(v))
		return nil
	}
	return Fields(r, v, what+": <<")
}

// Resolve follows aliases and unwraps documents.
func Resolve(n *yaml.Node) *yaml.Node {
	for n != nil {
		switch n.Kind {
		case yaml.AliasNode:
			n = n.Alias
		case yaml.DocumentNode:
			if len(n.Content) == 0 {
				return nil
			}
			n = n.Content[0]
		default:
			return n
		}
	}
	return n
}

// KindName names what a node is, for messages.
func KindName(n *yaml.Node) string {
	n = Resolve(n)
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!bool":
			return "a boolean"
		case "!!int", "!!float":
			return "a number"
		}
		return "a string"
	}
	return "an unknown node"
}

// String reads a scalar as a string (numbers and booleans are taken as
// their text, as YAML users expect for `run: 1`).
func String(r *Reporter, n *yaml.Node, what string) (string, bool) {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		r.At(n, "%s must be a string, got %s", what, KindName(n))
		return "", false
	}
	return n.Value, true
}

// Int reads an integer.
func Int(r *Reporter, n *yaml.Node, what string) (int, bool) {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		r.At(n, "%s must be a whole number, got %s", what, describe(n))
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil {
		r.At(n, "%s: %q is not a whole number", what, n.Value)
		return 0, false
	}
	return int(v), true
}

// Bool reads a boolean.
func Bool(r *Reporter, n *yaml.Node, what string) (bool, bool) {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		r.At(n, "%s must be true or false, got %s", what, describe(n))
		return false, false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		r.At(n, "%s: %v", what, err)
		return false, false
	}
	return b, true
}

// Float reads a number.
func Float(r *Reporter, n *yaml.Node, what string) (float64, bool) {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
		r.At(n, "%s must be a number, got %s", what, describe(n))
		return 0, false
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	if err != nil {
		r.At(n, "%s: %q is not a number", what, n.Value)
		return 0, false
	}
	return v, true
}

// Duration reads a Go duration such as 30s, 5m or 1h30m.
func Duration(r *Reporter, n *yaml.Node, what string) (time.Duration, bool) {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		r.At(n, "%s must be a duration such as 30s or 5m, got %s", what, KindName(n))
		return 0, false
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil {
		hint := ""
		if _, numErr := strconv.ParseFloat(n.Value, 64); numErr == nil {
			hint = fmt.Sprintf(" (a unit is required: %ss)", n.Value)
		}
		r.At(n, "%s: %q is not a duration such as 30s, 5m or 1h30m%s", what, n.Value, hint)
		return 0, false
	}
	if d < 0 {
		r.At(n, "%s: %q is negative", what, n.Value)
		return 0, false
	}
	return d, true
}

func describe(n *yaml.Node) string {
	n = Resolve(n)
	if n != nil && n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return fmt.Sprintf("%s %q", KindName(n), n.Value)
	}
	return KindName(n)
}

// Unknown reports a key that is not one of known, suggesting a close one.
func Unknown(r *Reporter, f Field, what string, known []string) {
	r.At(f.KeyN, "unknown field %q in %s%s", f.Key, what, Suggest(f.Key, known))
}

var labelRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]*$`) })

// ValidLabel reports whether s can be a step label.
func ValidLabel(s string) bool { return labelRE().MatchString(s) }

var identRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// ValidIdent reports whether s can be a var or env name (usable as vars.<name>).
func ValidIdent(s string) bool { return identRE().MatchString(s) }

// fieldMap is a mapping's fields (from Fields: each key once) looked up by
// key. A step has a handful of fields: searching them in place costs less
// than a map built per step, which was a tenth of a large plan's
// allocations.
type fieldMap []Field

// get is the value of key, and whether the mapping has it.
func (m fieldMap) get(key string) (*yaml.Node, bool) {
	for i := range m {
		if m[i].Key == key {
			return m[i].Value, true
		}
	}
	return nil, false
}

// has is whether the mapping has key.
func (m fieldMap) has(key string) bool {
	_, ok := m.get(key)
	return ok
}

// node is the value of key, or nil.
func (m fieldMap) node(key string) *yaml.Node {
	n, _ := m.get(key)
	return n
}

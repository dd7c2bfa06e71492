package schemacheck

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The library accepts any keyword value it can decode, so `type: strin`
// would silently mean nothing; checkSchema catches the mistakes people
// make in the keywords plans use, at the keyword, before the library sees
// the schema. Unknown keywords are annotations, as the specification says.

var typeNames = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// Keywords by the shape of their value.
var (
	schemaMaps   = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	subSchemas   = []string{"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems"}
	schemaLists  = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	numbers      = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
	counts       = []string{"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"}
	strKeywords  = []string{"format", "title", "description", "$ref", "$id", "$anchor", "$comment"}
	supportedSch = []string{"", "https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema", "https://json-schema.org/draft-07/schema#"}
)

func checkSchema(v any, path []string) error {
	bad := func(p []string, format string, args ...any) error {
		return &SchemaError{Path: p, Msg: fmt.Sprintf(format, args...)}
	}
	if _, ok := v.(bool); ok {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return bad(path, "want a schema (a mapping or true/false), got %s", kind(v))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		x, at := m[k], append(append([]string(nil), path...), k)
		switch {
		case k == "type":
			if err := checkType(x, at); err != nil {
				return err
			}
		case in(k, schemaMaps):
			mm, ok := x.(map[string]any)
			if !ok {
				return bad(at, "want a mapping of names to schemas, got %s", kind(x))
			}
			for _, name := range sortedKeys(mm) {
				if k == "patternProperties" {
					if _, err := regexp.Compile(name); err != nil {
						return bad(append(at, name), "not a regular expression: %v", err)
					}
				}
				if err := checkSchema(mm[name], append(at, name)); err != nil {
					return err
				}
			}
		case in(k, subSchemas):
			// Draft-07 items may be a list of schemas.
			if l, ok := x.([]any); ok && k == "items" {
				if err := checkList(l, at, false); err != nil {
					return err
				}
				continue
			}
			if err := checkSchema(x, at); err != nil {
				return err
			}
		case in(k, schemaLists):
			l, ok := x.([]any)
			if !ok {
				return bad(at, "want a list of schemas, got %s", kind(x))
			}
			if err := checkList(l, at, k != "prefixItems"); err != nil {
				return err
			}
		case k == "required":
			l, ok := x.([]any)
			if !ok {
				return bad(at, "want a list of property names, got %s", kind(x))
			}
			for i, e := range l {
				if _, ok := e.(string); !ok {
					return bad(append(at, strconv.Itoa(i)), "want a property name (a string), got %s", kind(e))
				}
			}
		case k == "enum":
			if _, ok := x.([]any); !ok {
				return bad(at, "want a list of values, got %s", kind(x))
			}
		case in(k, numbers) || k == "multipleOf":
			f, ok := x.(float64)
			if !ok {
				return bad(at, "want a number, got %s", kind(x))
			}
			if k == "multipleOf" && f <= 0 {
				return bad(at, "want a number greater than 0, got %v", f)
			}
		case in(k, counts):
			f, ok := x.(float64)
			if !ok || f < 0 || f != math.Trunc(f) {
				return bad(at, "want a non-negative integer, got %s", shown(x))
			}
		case k == "pattern":
			s, ok := x.(string)
			if !ok {
				return bad(at, "want a regular expression (a string), got %s", kind(x))
			}
			if _, err := regexp.Compile(s); err != nil {
				return bad(at, "not a regular expression: %v", err)
			}
		case in(k, strKeywords):
			if _, ok := x.(string); !ok {
				return bad(at, "want a string, got %s", kind(x))
			}
		case k == "$schema":
			s, _ := x.(string)
			if !in(s, supportedSch) || s == "" {
				return bad(at, "runner checks draft 2020-12 and draft-07 schemas, got %s", shown(x))
			}
		case k == "uniqueItems":
			if _, ok := x.(bool); !ok {
				return bad(at, "want true or false, got %s", kind(x))
			}
		}
	}
	return nil
}

func checkType(x any, at []string) error {
	want := "value must be one of " + quoteAll(typeNames)
	switch t := x.(type) {
	case string:
		if !in(t, typeNames) {
			return &SchemaError{Path: at, Msg: want}
		}
	case []any:
		for i, e := range t {
			if s, ok := e.(string); !ok || !in(s, typeNames) {
				return &SchemaError{Path: append(at, strconv.Itoa(i)), Msg: want}
			}
		}
	default:
		return &SchemaError{Path: at, Msg: "want a type name or a list of them, got " + kind(x)}
	}
	return nil
}

func checkList(l []any, at []string, nonEmpty bool) error {
	if nonEmpty && len(l) == 0 {
		return &SchemaError{Path: at, Msg: "want at least one schema, got an empty list"}
	}
	for i, e := range l {
		if err := checkSchema(e, append(append([]string(nil), at...), strconv.Itoa(i))); err != nil {
			return err
		}
	}
	return nil
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}

func in(s string, list []string) bool {
	for _, x := range list {
		if s == x {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func quoteAll(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = "'" + s + "'"
	}
	return strings.Join(q, ", ")
}

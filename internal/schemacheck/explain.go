package schemacheck

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// The library's validation error is a chain "validating <schema path>:
// ... : <keyword>: <what>", naming places in the schema, not in the
// value. explain follows the schema paths through the value to name the
// value's place, and rewords the innermost message in runner's terms.

func (s *Schema) explain(doc any, err error) error {
	text := strings.TrimSpace(err.Error())
	var schemaPaths []string
	for strings.HasPrefix(text, "validating ") {
		rest := strings.TrimPrefix(text, "validating ")
		// Schema paths are "root" or JSON Pointers, which hold no ": ".
		p, after, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		schemaPaths = append(schemaPaths, p)
		text = after
	}
	at, val := s.locate(doc, schemaPaths)
	return &ValueError{Path: at, Msg: reword(text, val)}
}

// locate walks the value along the schema paths the library went through,
// returning the value's place and the value there.
func (s *Schema) locate(doc any, schemaPaths []string) ([]string, any) {
	var at []string
	val := doc
	prev := []string{}
	for _, p := range schemaPaths {
		full := splitPointer(p)
		// A path that extends the previous one went into a sub-schema of
		// it; any other path is where a $ref led, for the same value.
		var segs []string
		if hasPrefix(full, prev) {
			segs = full[len(prev):]
		}
		base := full[:len(full)-len(segs)]
		for i := 0; i < len(segs); i++ {
			sub := append(append([]string(nil), base...), segs[:i+1]...)
			switch segs[i] {
			case "properties":
				if i+1 < len(segs) {
					i++
					at, val = append(at, segs[i]), field(val, segs[i])
				}
			case "prefixItems":
				if i+1 < len(segs) {
					i++
					at, val = append(at, segs[i]), index(val, segs[i])
				}
			case "items", "additionalProperties", "unevaluatedItems", "unevaluatedProperties", "additionalItems":
				k, ok := s.failing(val, sub)
				if !ok {
					return at, val
				}
				at = append(at, k)
				if l, isList := val.([]any); isList {
					n, _ := strconv.Atoi(k)
					val = l[n]
				} else {
					val = field(val, k)
				}
			case "patternProperties":
				if i+1 < len(segs) {
					i++
					k, ok := s.failing(val, append(sub, segs[i]))
					if !ok {
						return at, val
					}
					at, val = append(at, k), field(val, k)
				}
			case "allOf", "anyOf", "oneOf", "dependentSchemas":
				i++ // the index or name picks a schema for the same value
			}
		}
		prev = full
	}
	return at, val
}

// failing finds the first element or property (in order of index or
// name) of val that the sub-schema at schemaPath rejects. The sub-schema
// is checked on its own, with the root's $defs so local $refs resolve.
func (s *Schema) failing(val any, schemaPath []string) (string, bool) {
	sub := s.raw
	for _, seg := range schemaPath {
		switch t := sub.(type) {
		case map[string]any:
			sub = t[seg]
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(t) {
				return "", false
			}
			sub = t[n]
		default:
			return "", false
		}
	}
	alone := map[string]any{}
	if m, ok := sub.(map[string]any); ok {
		for k, v := range m {
			alone[k] = v
		}
	} else if b, ok := sub.(bool); ok && !b {
		alone["not"] = map[string]any{}
	}
	if root, ok := s.raw.(map[string]any); ok {
		for _, k := range []string{"$defs", "definitions"} {
			if _, has := alone[k]; !has && root[k] != nil {
				alone[k] = root[k]
			}
		}
	}
	raw, err := json.Marshal(alone)
	if err != nil {
		return "", false
	}
	res, err := resolve(raw)
	if err != nil {
		return "", false
	}
	switch t := val.(type) {
	case []any:
		for i, e := range t {
			if res.Validate(e) != nil {
				return strconv.Itoa(i), true
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if res.Validate(t[k]) != nil {
				return k, true
			}
		}
	}
	return "", false
}

func splitPointer(p string) []string {
	if p == "root" || p == "" || !strings.HasPrefix(p, "/") {
		return []string{}
	}
	return strings.Split(p[1:], "/")
}

func hasPrefix(segs, prefix []string) bool {
	if len(prefix) > len(segs) {
		return false
	}
	for i := range prefix {
		if segs[i] != prefix[i] {
			return false
		}
	}
	return true
}

func field(v any, k string) any {
	if m, ok := v.(map[string]any); ok {
		return m[k]
	}
	return nil
}

func index(v any, k string) any {
	if l, ok := v.([]any); ok {
		if n, err := strconv.Atoi(k); err == nil && n >= 0 && n < len(l) {
			return l[n]
		}
	}
	return nil
}

// The patterns of google's error texts, compiled on first use: every
// start of runner links this package, few runs word a schema error.
var (
	reType     = lazyRE(`(?s)^type: .* has type "(\w+)", want (.*)$`)
	reRequired = lazyRE(`^required: missing properties: \[(.*)\]$`)
	reExtra    = lazyRE(`^unexpected additional properties \[(.*)\]$`)
	reBound    = lazyRE(`^(minimum|maximum|exclusiveMinimum|exclusiveMaximum|multipleOf): \S+ (?:is|is not) .* ([-0-9.e+]+)$`)
	reLength   = lazyRE(`(?s)^(minLength|maxLength): .* contains (\d+) Unicode code points, (?:fewer|more) than (\d+)$`)
	reItems    = lazyRE(`^(minItems|maxItems): array length (\d+) is (?:less|greater) than (\d+)$`)
	reProps    = lazyRE(`^(minProperties|maxProperties): object has (\d+) properties, (?:less|greater) than (\d+)$`)
	reQuoted   = lazyRE(`"((?:[^"\\]|\\.)*)"`)
)

// reword turns the library's innermost message about val into runner's
// wording; what it does not know it passes on.
func reword(msg string, val any) string {
	if m := reType().FindStringSubmatch(msg); m != nil {
		want := strings.TrimPrefix(m[2], "one of ")
		var types []string
		for _, t := range unquote(want) {
			types = append(types, strings.Split(t, ", ")...)
		}
		return fmt.Sprintf("got %s, want %s", m[1], strings.Join(types, " or "))
	}
	if m := reRequired().FindStringSubmatch(msg); m != nil {
		names := unquote(m[1])
		if len(names) == 1 {
			return fmt.Sprintf("missing property '%s'", names[0])
		}
		return "missing properties " + quoteAll(names)
	}
	if m := reExtra().FindStringSubmatch(msg); m != nil {
		names := unquote(m[1])
		sort.Strings(names)
		if len(names) == 1 {
			return fmt.Sprintf("additional property '%s' not allowed", names[0])
		}
		return "additional properties " + quoteAll(names) + " not allowed"
	}
	if m := reBound().FindStringSubmatch(msg); m != nil {
		limit, err := strconv.ParseFloat(m[2], 64)
		if err == nil {
			return fmt.Sprintf("%s: got %s, want %s", m[1], shown(val), strconv.FormatFloat(limit, 'g', -1, 64))
		}
	}
	for _, re := range []*regexp.Regexp{reLength(), reItems(), reProps()} {
		if m := re.FindStringSubmatch(msg); m != nil {
			return fmt.Sprintf("%s: got %s, want %s", m[1], m[2], m[3])
		}
	}
	switch kw, _, _ := strings.Cut(msg, ":"); kw {
	case "enum":
		return fmt.Sprintf("enum: got %s, not one of the allowed values", shown(val))
	case "const":
		return fmt.Sprintf("const: got %s, not the one allowed value", shown(val))
	case "pattern":
		if q := reQuoted().FindAllStringSubmatch(msg, -1); len(q) == 2 {
			return fmt.Sprintf("pattern: %s does not match %s", shown(val), q[1][0])
		}
	case "anyOf":
		return "anyOf: matches none of the alternatives"
	case "oneOf":
		if strings.Contains(msg, "validated against both") {
			return "oneOf: matches more than one alternative"
		}
		return "oneOf: matches none of the alternatives"
	case "not":
		return "not: matches a schema it must not match"
	}
	return msg
}

// unquote reads the %q-quoted names the library lists.
func unquote(s string) []string {
	var out []string
	for _, m := range reQuoted().FindAllString(s, -1) {
		if u, err := strconv.Unquote(m); err == nil {
			out = append(out, u)
		}
	}
	return out
}

func shown(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}

// lazyRE compiles expr on its first use.
func lazyRE(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/planrunner/runner/internal/plans"
	"gopkg.in/yaml.v3"
)

// ResolveVars applies `--var name=value` overrides to the plan's defaults.
// A value takes its default's type: a var whose default is 3 must be given
// a whole number. Lists and mappings are given as YAML or JSON.
func ResolveVars(p *plans.Plan, overrides map[string]string) (map[string]any, error) {
	out := map[string]any{}
	names := make([]string, 0, len(p.Vars))
	for _, v := range p.Vars {
		out[v.Name] = v.Default
		names = append(names, v.Name)
	}
	var problems []string
	for _, name := range sortedKeys(overrides) {
		raw := overrides[name]
		def, ok := p.VarDefault(name)
		if !ok {
			problems = append(problems, fmt.Sprintf("--var %s: the plan has no var %q%s", name, name, plans.Suggest(name, names)))
			continue
		}
		v, err := convertVar(def, raw)
		if err != nil {
			problems = append(problems, fmt.Sprintf("--var %s=%s: %v", name, raw, err))
			continue
		}
		out[name] = v
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	return out, nil
}

func convertVar(def any, raw string) (any, error) {
	switch def.(type) {
	case int:
		v, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Errorf("want a whole number, like the default %v", def)
		}
		return v, nil
	case float64:
		v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil {
			return nil, fmt.Errorf("want a number, like the default %v", def)
		}
		return v, nil
	case bool:
		v, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Errorf("want true or false, like the default %v", def)
		}
		return v, nil
	case nil, string:
		return raw, nil
	}
	var v any
	if err := yaml.Unmarshal([]byte(raw), &v); err != nil {
		return nil, fmt.Errorf("want YAML or JSON like the default %s: %v", jsonText(def), err)
	}
	// The plan was checked with the default's kind (valueType): a list
	// stays a list, a mapping a mapping.
	switch def.(type) {
	case []any:
		if _, ok := v.([]any); !ok && v != nil {
			return nil, fmt.Errorf("want a list (YAML or JSON) like the default %s", jsonText(def))
		}
	case map[string]any:
		if _, ok := v.(map[string]any); !ok && v != nil {
			return nil, fmt.Errorf("want a mapping (YAML or JSON) like the default %s", jsonText(def))
		}
	}
	return v, nil
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// SavedVars turns the vars saved in blackboard.json back into the types
// the plan declares (JSON gives every number back as a float).
func SavedVars(p *plans.Plan, saved map[string]any) map[string]any {
	out := map[string]any{}
	for _, v := range p.Vars {
		val, ok := saved[v.Name]
		if !ok {
			val = v.Default
		}
		if f, isFloat := val.(float64); isFloat {
			if _, wantInt := v.Default.(int); wantInt && f == float64(int(f)) {
				val = int(f)
			}
		}
		out[v.Name] = val
	}
	return out
}

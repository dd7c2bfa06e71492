package plans

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// AgentOverrides collects `runner run --agent NAME.FIELD=VALUE` (a
// flag.Value): switch an agent to another provider, model or server
// without editing the plan (agent -> field -> value).
type AgentOverrides map[string]map[string]string

// overridable are the agent fields --agent may set.
var overridable = []string{"provider", "model", "base_url", "api_key_env", "api", "stream", "reasoning_effort"}

// OverridableFields are the agent fields --agent may set.
func OverridableFields() []string { return slices.Clone(overridable) }

func (o AgentOverrides) String() string { return "" }

func (o AgentOverrides) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	name, field, ok2 := strings.Cut(k, ".")
	if !ok || !ok2 || name == "" || v == "" {
		return fmt.Errorf("want NAME.FIELD=VALUE (FIELD one of %s)", strings.Join(overridable, ", "))
	}
	if !slices.Contains(overridable, field) {
		return fmt.Errorf("cannot set agent field %q%s (one of %s)", field, Suggest(field, overridable), strings.Join(overridable, ", "))
	}
	if field == "stream" && v != "true" && v != "false" {
		return fmt.Errorf("%s.stream=%s: want true or false", name, v)
	}
	if field == "provider" && !slices.Contains(Providers, v) {
		return fmt.Errorf("unknown provider %q%s (one of %s)", v, Suggest(v, Providers), strings.Join(Providers, ", "))
	}
	if o[name] == nil {
		o[name] = map[string]string{}
	}
	if _, dup := o[name][field]; dup {
		return fmt.Errorf("%s.%s given twice", name, field)
	}
	o[name][field] = v
	return nil
}

// Override changes the plan's agents as the overrides say. An agent moved
// off the script provider drops its canned answers.
func (p *Plan) Override(o map[string]map[string]string) error {
	names := make([]string, 0, len(o))
	for n := range o {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		a := p.Agent(name)
		if a == nil {
			return fmt.Errorf("--agent %s: the plan has no agent %q%s (agents: %s)", name, name, Suggest(name, p.AgentNames()), strings.Join(p.AgentNames(), ", "))
		}
		f := o[name]
		if v, ok := f["provider"]; ok {
			if v == "script" && a.Provider != "script" {
				return fmt.Errorf("--agent %s.provider=script: agent %s has no canned responses in the plan", name, name)
			}
			a.Provider = v
			if v != "script" {
				a.Responses, a.ResponsesFile = nil, ""
			}
		}
		if v, ok := f["model"]; ok {
			a.Model = v
		}
		if v, ok := f["base_url"]; ok {
			a.BaseURL = v
		}
		if v, ok := f["stream"]; ok {
			a.Stream = v == "true"
		}
		if v, ok := f["api_key_env"]; ok {
			if !ValidIdent(v) {
				return fmt.Errorf("--agent %s.api_key_env=%s: not an environment variable name", name, v)
			}
			a.APIKeyEnv = v
		}
		if v, ok := f["api"]; ok {
			if v != APIResponses && v != APIChat {
				return fmt.Errorf("--agent %s.api=%s: unknown api (responses or chat)", name, v)
			}
			a.API = v
		}
		if v, ok := f["reasoning_effort"]; ok {
			if !slices.Contains(ReasoningEfforts, v) {
				return fmt.Errorf("--agent %s.reasoning_effort=%s: unknown effort%s (one of %s)", name, v, Suggest(v, ReasoningEfforts), strings.Join(ReasoningEfforts, ", "))
			}
			a.ReasoningEffort = v
		}
		if (a.API != "" || a.ReasoningEffort != "") && a.Provider != "openai" {
			return fmt.Errorf("--agent %s: api and reasoning_effort are for the openai provider only, and the agent's provider is %s", name, a.Provider)
		}
		if a.Provider != "script" && a.Provider != "a2a" && a.Model == "" {
			return fmt.Errorf("--agent %s: the %s provider needs a model: add --agent %s.model=MODEL", name, a.Provider, name)
		}
	}
	return nil
}

// Args are the overrides as NAME.FIELD=VALUE arguments, in order.
func (o AgentOverrides) Args() []string {
	var out []string
	for name, fields := range o {
		for f, v := range fields {
			out = append(out, name+"."+f+"="+v)
		}
	}
	sort.Strings(out)
	return out
}

// Saved is what blackboard.json keeps of the overrides (nil: none).
func (o AgentOverrides) Saved() map[string]map[string]string {
	if len(o) == 0 {
		return nil
	}
	return o
}

// VarArgs collects `--var NAME=VALUE` (a flag.Value, repeatable); a name
// given twice is refused. ResolveVars (engine) checks them against the
// plan's vars.
type VarArgs map[string]string

func (v VarArgs) String() string { return "" }

func (v VarArgs) Set(s string) error {
	k, val, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want name=value, got %q", s)
	}
	if _, dup := v[k]; dup {
		return fmt.Errorf("%s given twice", k)
	}
	v[k] = val
	return nil
}

package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr/types"
	"github.com/planrunner/runner/internal/jsonschema"
	"github.com/planrunner/runner/plans"
	"gopkg.in/yaml.v3"
)

// Tools the plan defines (plans/tools.go): each is compiled here as a
// command step of the registry's `command` type, in the plan's scope plus
// `args` (the call's arguments, typed by the tool's parameters), so its
// script obeys every rule of a command step's: ${{ args.X }} reaches the
// shell as data through an environment variable, a place where a value
// cannot stand safely is refused at load, and sandbox:, env:, dir: and
// max_output: mean what they mean there. The llm step offers the tools
// its agent names, and runs a call through StepContext.RunPlanTool.

// PlanTool is a compiled tool of the plan.
type PlanTool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of its arguments, as JSON (an object
	// schema: what both providers require of a tool).
	Parameters json.RawMessage
	Timeout    time.Duration
	impl       Step
}

// toolCommandType is the step type a tool's command is decoded as.
const toolCommandType = "command"

// compileTools compiles the plan's tools.
func (p *Program) compileTools(r *plans.Reporter, reg *Registry) map[string]*PlanTool {
	if len(p.Plan.Tools) == 0 {
		return nil
	}
	kind, ok := reg.Lookup(toolCommandType)
	if !ok {
		r.At(p.Plan.Tools[0].KeyNode, "tools: this runner has no %s step type to run a tool's script with", toolCommandType)
		return nil
	}
	out := map[string]*PlanTool{}
	for _, t := range p.Plan.Tools {
		what := "tools." + t.Name
		raw, props := toolSchema(r, t.Parameters, what)
		if raw == nil {
			continue
		}
		argsT := types.Type(types.Any)
		if props != nil {
			argsT = props
		}
		s := &plans.Step{Label: t.Name, Type: toolCommandType, Node: t.Command, TypeNode: t.KeyNode}
		d := newDecoder(p.Plan, s, r, p.scope.with("args", argsT))
		d.spec = SpecOf(kind)
		impl := kind.Decode(d)
		d.finish()
		out[t.Name] = &PlanTool{Name: t.Name, Description: t.Description, Parameters: raw, Timeout: t.Timeout, impl: impl}
	}
	return out
}

// toolSchema checks a tool's parameters as a JSON Schema of an object
// and gives it as JSON, with the types of args for the tool's
// expressions: its properties (a misspelt args.X is refused at load), or
// nil (any) when it admits other names.
func toolSchema(r *plans.Reporter, n *yaml.Node, what string) (json.RawMessage, types.Map) {
	if n == nil {
		return json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`), types.Map{}
	}
	var v any
	if err := n.Decode(&v); err != nil {
		r.At(n, "%s.parameters: %v", what, err)
		return nil, nil
	}
	m, ok := yamlJSON(v).(map[string]any)
	if !ok {
		r.At(n, "%s.parameters must be a JSON Schema mapping ({type: object, properties: {...}}), got %s", what, plans.KindName(n))
		return nil, nil
	}
	switch typ := m["type"]; typ {
	case nil:
		m["type"] = "object" // what both providers require of a tool's parameters
	case "object":
	default:
		r.At(childOf(n, "type"), "%s.parameters: type must be object (a tool takes named arguments), got %v", what, typ)
		return nil, nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		r.At(n, "%s.parameters: %v", what, err)
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err == nil {
		c := jsonschema.NewCompiler()
		if err = c.AddResource("tool.json", doc); err == nil {
			_, err = c.Compile("tool.json")
		}
	}
	if err != nil {
		at, msg := schemaAt(n, err)
		r.At(at, "%s.parameters: %s", what, msg)
		return nil, nil
	}
	props, hasProps := m["properties"].(map[string]any)
	if extra, given := m["additionalProperties"]; given && extra != false {
		return raw, nil // other names are allowed: args.X of any name
	} else if !given && !hasProps {
		return raw, nil
	}
	t := types.Map{}
	for k := range props {
		t[k] = types.Any
	}
	return raw, t
}

// schemaAt finds where in the schema mapping a compile error points, and
// says it in one line.
func schemaAt(n *yaml.Node, err error) (*yaml.Node, string) {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			for len(ve.Causes) > 0 {
				ve = ve.Causes[0]
			}
			at := n
			for _, seg := range ve.InstanceLocation {
				next := childOf(at, seg)
				if next == nil {
					break
				}
				at = next
			}
			msg, _, _ := strings.Cut(strings.TrimSpace(ve.Error()), "\n")
			return at, msg + " (not a valid JSON Schema)"
		}
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return n, msg
}

// childOf steps into a mapping key or a sequence index (nil: none).
func childOf(n *yaml.Node, seg string) *yaml.Node {
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

// yamlJSON turns YAML-decoded values into ones encoding/json accepts
// (YAML allows non-string mapping keys).
func yamlJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = yamlJSON(x)
		}
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[fmt.Sprint(k)] = yamlJSON(x)
		}
		return out
	case []any:
		for i, x := range t {
			t[i] = yamlJSON(x)
		}
	}
	return v
}

// PlanTool is the plan's tool named name, as the running step's plan
// defines it (a called plan's own), or nil.
func (sc *StepContext) PlanTool(name string) *PlanTool {
	if sc.node == nil {
		return nil
	}
	return sc.node.tools[name]
}

// RunPlanTool runs a call of plan tool t with args (already checked
// against its parameters) as the step's: its script sees args, runs in
// the step's workdir and environment, and is bounded by the tool's
// timeout and ctx. The result is the command's (Fields a command
// result); a non-zero exit is an error beside it.
func (sc *StepContext) RunPlanTool(ctx context.Context, t *PlanTool, args map[string]any) (Result, error) {
	vc := visitClock{}
	if sc.clock != nil {
		vc = *sc.clock
	}
	if args == nil {
		args = map[string]any{}
	}
	vc.args = args
	child := &StepContext{Label: sc.Label, Visit: sc.Visit, Attempt: sc.Attempt, RunID: sc.RunID, Workdir: sc.Workdir,
		Env: sc.Env, Board: sc.Board, Log: sc.Log.With().Str("tool", t.Name).Logger(), Plan: sc.Plan,
		eval: sc.eval, runner: sc.runner, clock: &vc, node: sc.node}
	ctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	return t.impl.Run(ctx, child)
}

// PlanTools lists the tools of the running step's plan, by name.
func (sc *StepContext) PlanTools() []*PlanTool {
	if sc.node == nil {
		return nil
	}
	out := make([]*PlanTool, 0, len(sc.node.tools))
	for _, t := range sc.node.tools {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

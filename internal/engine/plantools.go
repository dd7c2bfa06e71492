package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/expr-lang/expr/types"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/schemacheck"
	"gopkg.in/yaml.v3"
)

// Tools the plan defines (internal/plans/tools.go): each is compiled here as a
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
	// sub is a sub-plan tool's callee (nil: a command tool).
	sub *Program
}

// IsPlan reports whether the tool runs a sub-plan rather than a command.
func (t *PlanTool) IsPlan() bool { return t.sub != nil }

// toolCommandType is the step type a tool's command is decoded as.
const toolCommandType = "command"

// compileTools compiles the plan's tools.
func (p *Program) compileTools(r *plans.Reporter, reg *Registry) map[string]*PlanTool {
	if len(p.Plan.Tools) == 0 {
		return nil
	}
	out := map[string]*PlanTool{}
	for _, t := range p.Plan.Tools {
		if t.Call != nil {
			if t.Call.Plan == nil {
				continue // reported by the loader
			}
			if pt := p.compileToolPlan(r, reg, t); pt != nil {
				out[t.Name] = pt
			}
			continue
		}
		if t.Command == nil {
			continue
		}
		kind, ok := reg.Lookup(toolCommandType)
		if !ok {
			r.At(t.KeyNode, "tools.%s: this runner has no %s step type to run a tool's script with", t.Name, toolCommandType)
			continue
		}
		what := "tools." + t.Name
		raw, props := toolSchema(r, t.Parameters, what)
		if raw == nil {
			continue
		}
		argsT := types.Type(types.Any)
		if props != nil {
			argsT = props
		}
		s := plans.NewStep(t.Name, toolCommandType)
		s.Node, s.TypeNode = t.Command, t.KeyNode
		d := newDecoder(p.Plan, s, r, p.scope.with("args", argsT.Nature()))
		d.spec = SpecOf(kind)
		impl := kind.Decode(d)
		d.finish()
		out[t.Name] = &PlanTool{Name: t.Name, Description: t.Description, Parameters: raw, Timeout: t.Timeout, impl: impl}
	}
	return out
}

// compileToolPlan compiles a sub-plan tool: its callee as a program of
// its own (its agents are the run's tools/TOOL/NAME), and its parameters,
// the JSON Schema of the callee's vars.
func (p *Program) compileToolPlan(r *plans.Reporter, reg *Registry, t *plans.Tool) *PlanTool {
	callee := t.Call.Plan
	amap := map[string]string{}
	for _, a := range callee.Agents {
		amap[a.Name] = p.globalAgent(t.AgentName(a.Name))
	}
	cr := &plans.Reporter{File: callee.Path}
	sub := compilePlan(cr, callee, reg, amap, whole)
	r.List = append(r.List, cr.List...)
	n := 0
	for _, e := range r.List {
		if e.File == callee.Path {
			n++
		}
	}
	if n > 0 {
		r.At(t.Call.Node, "tools.%s: plan %s has %d problem(s), listed under %s", t.Name, t.Call.Path, n, callee.Path)
	}
	raw, err := json.Marshal(varsSchema(callee))
	if err != nil {
		r.At(t.Call.Node, "tools.%s: the vars of %s make no JSON Schema: %v", t.Name, t.Call.Path, err)
		return nil
	}
	return &PlanTool{Name: t.Name, Description: t.Description, Parameters: raw, Timeout: t.Timeout, sub: sub}
}

// varsSchema is the JSON Schema of a sub-plan tool's arguments: one
// property per var of the callee, typed by its default as a `type: plan`
// call's vars are (an int var takes integers only, a float var any
// number); a var whose default is null takes any value and is required.
func varsSchema(p *plans.Plan) map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, v := range p.Vars {
		prop := map[string]any{}
		switch v.Default.(type) {
		case nil:
			required = append(required, v.Name)
		case string:
			prop["type"] = "string"
		case bool:
			prop["type"] = "boolean"
		case int, int64:
			prop["type"] = "integer"
		case float64:
			prop["type"] = "number"
		case []any:
			prop["type"] = "array"
		case map[string]any:
			prop["type"] = "object"
		}
		if v.Default != nil {
			prop["default"] = schemacheck.JSONValue(v.Default)
		}
		props[v.Name] = prop
	}
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		out["required"] = required
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
	m, ok := schemacheck.JSONValue(v).(map[string]any)
	if !ok {
		r.At(n, "%s.parameters must be a JSON Schema mapping ({type: object, properties: {...}}), got %s", what, plans.KindName(n))
		return nil, nil
	}
	switch typ := m["type"]; typ {
	case nil:
		m["type"] = "object" // what both providers require of a tool's parameters
	case "object":
	default:
		r.At(schemacheck.Child(n, "type"), "%s.parameters: type must be object (a tool takes named arguments), got %v", what, typ)
		return nil, nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		r.At(n, "%s.parameters: %v", what, err)
		return nil, nil
	}
	if _, err := schemacheck.Compile("tool.json", raw); err != nil {
		at, msg := schemacheck.Problem(n, err)
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
	if t.sub != nil {
		return sc.runToolPlan(ctx, t, args)
	}
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

// runToolPlan runs a call of sub-plan tool t: the callee runs whole as a
// nested run over a fresh in-memory board (its records are not the
// step's: the session records the call and its result, so a replay
// never runs it again), in the step's workdir, with the run's agent set
// (the callee's agents are in it as tools/TOOL/NAME) and secrets, bounded
// by the tool's timeout and ctx (the step's, so the parent's timeout and
// cancellation hold). The result's Fields are a *PlanResult, the
// callee's declared outputs; a failed callee is an error.
func (sc *StepContext) runToolPlan(ctx context.Context, t *PlanTool, args map[string]any) (Result, error) {
	nr := &Runner{Prog: t.sub, Log: sc.Log.With().Str("tool", t.Name).Logger(), Workdir: sc.Workdir,
		Vars: calleeVars(t.sub.Plan, args)}
	runID := sc.RunID + "/tools/" + t.Name
	if p := sc.runner; p != nil {
		set, err := p.agentSet()
		if err != nil {
			return Result{}, err
		}
		nr.Agents, nr.Secrets, nr.Sleep, nr.Jitter, nr.Clock = set, p.Secrets, p.Sleep, p.Jitter, p.Clock
	}
	nr.Board = board.New(board.Run{ID: runID, PlanPath: t.sub.Plan.Path, PlanSHA256: t.sub.Plan.SHA256,
		Vars: nr.Vars, Workdir: sc.Workdir, StartedAt: time.Now().UTC()})
	ctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	if err := nr.Run(ctx); err != nil {
		return Result{}, err
	}
	outputs, err := nr.outputs()
	if err != nil {
		return Result{}, err
	}
	return Result{Output: outputs, Fields: &PlanResult{Outputs: outputs}}, nil
}

// Outputs evaluates the plan's declared outputs (its outputs: block)
// once the run has succeeded: what a caller of the plan gets back (an
// A2A client, as a task's artifact).
func (r *Runner) Outputs() (map[string]any, error) { return r.outputs() }

// outputs evaluates the run's plan's declared outputs once it has run.
func (r *Runner) outputs() (map[string]any, error) {
	out := map[string]any{}
	for _, o := range r.Prog.outputs {
		var v any
		err := r.eval.withRefs(o.expr.stepRefs(), nil, nil, func(env map[string]any) (e error) {
			v, e = o.expr.Eval(env)
			return e
		})
		if err != nil {
			return nil, fmt.Errorf("outputs.%s: %w", o.name, err)
		}
		out[o.name] = jsonValue(v)
	}
	return out, nil
}

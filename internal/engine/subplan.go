package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"strings"

	"github.com/expr-lang/expr/types"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
	"gopkg.in/yaml.v3"
)

// Sub-plans: a step of `type: plan` runs another plan file. The loader
// (internal/plans/call.go) reads the callee; here it is compiled into a Program of
// its own (its expressions see its own vars and steps), and the
// interpreter runs its steps as the call's children, as it runs a
// sequence's: one interpreter, so resume, replay, limits and Temporal
// treat them as they treat any step.
//
// A callee step's label on the board is CALL/LABEL (`review/fix`; an item
// of a for_each call: `review[2]/fix`), a name no plan label can take, so
// every record, recording and report row of the callee is kept under the
// call and found again by label. Its expressions are evaluated in a frame
// of their own (one per call label): steps.X there is the callee's X.

// PlanType is the `plan` step type: a call of another plan. The engine
// runs it itself (Node.Sub); its Decode only reads its fields so the
// schema and the reference describe them.
type PlanType struct{}

// PlanResult is a call's result: the callee's outputs (also its output).
type PlanResult struct {
	Outputs map[string]any `json:"outputs"`
}

// Name is the value of `type:`.
func (PlanType) Name() string { return plans.CallType }

// Result is what steps.<label> of a call holds beside the common fields.
func (PlanType) Result() any { return PlanResult{} }

// Caps: a call is the interpreter's; it never runs as a leaf, and a
// replay replays its steps, each as its own type says.
func (PlanType) Caps() Caps { return Caps{Sched: SchedPure, Replay: ReplayRerun} }

// Spec describes the type for the schema and the reference.
func (PlanType) Spec() *TypeSpec { return &planSpec }

var planSpec = TypeSpec{
	Doc: "Runs another plan file (a sub-plan) with the vars given, and gives back the outputs it declares. " +
		"Its steps run as children of the call, labelled CALL/LABEL, and are kept in this run's blackboard.json; " +
		"the called plan is loaded and checked with this one, and a chain of calls that comes back to a file is refused.",
	Fields: []Field{
		{Name: "plan", Kind: KindString, Required: true,
			Doc:      "The plan file to run, relative to this plan's file.",
			Examples: []any{"review.yaml"}},
		{Name: "vars", Kind: KindMapping, Schema: `{"additionalProperties": true}`,
			Doc:      "Values for the called plan's vars (each checked against the type of its default); ${{ }} is evaluated here, in the caller.",
			Examples: []any{map[string]any{"package": "${{ item }}"}}},
		{Name: "agents", Kind: KindMapping, Schema: `{"additionalProperties": {"type": "string"}}`,
			Doc:      "Agents of this plan that stand in for the called plan's agents (its name: ours); an agent not given runs as the called plan defines it.",
			Examples: []any{map[string]any{"coder": "fixer"}}},
	},
	Example: `- label: review
  type: plan
  plan: review.yaml
  vars: {package: engine}`,
	Results: []ResultField{
		{Name: "outputs", Doc: "The called plan's declared outputs, by name (also the step's output)."},
	},
}

// Decode reads the call's fields; plans.Parse has loaded the callee and
// compile.go compiles it.
func (PlanType) Decode(d *Decoder) Step {
	s := &callStep{}
	if d.Required("plan") {
		s.path = d.String("plan")
	}
	d.Node("vars")
	d.Node("agents")
	return s
}

type callStep struct{ path string }

func (s *callStep) Run(context.Context, *StepContext) (Result, error) {
	return Result{}, errors.New("a sub-plan call is run by the interpreter, not as a step")
}

// Describe is the call's line in the dry run.
func (s *callStep) Describe() string { return "run plan " + s.path }

// callVar is one var a call passes: its template (compiled in the
// caller's scope) or literal value.
type callVar struct {
	name string
	tmpl *Template
	lit  any
}

// output is one of a callee's declared outputs, compiled in its scope.
type output struct {
	name string
	expr *Expr
}

// compileCall compiles call step n's callee and its vars. callerAgents
// maps the caller's agent names to the run's (nil at the top).
func (p *Program) compileCallee(r *plans.Reporter, reg *Registry, s *plans.Step) *Program {
	call := s.Call
	if call == nil || call.Plan == nil {
		return nil
	}
	amap := map[string]string{}
	for _, a := range call.Plan.Agents {
		amap[a.Name] = p.globalAgent(call.AgentName(s.Label, a.Name))
	}
	cr := &plans.Reporter{File: call.Plan.Path}
	sub := compilePlan(cr, call.Plan, reg, amap, whole)
	r.List = append(r.List, cr.List...)
	// Said at the call too, so reading the caller's problems alone shows
	// that its callee has some.
	n := 0
	for _, e := range r.List {
		if e.File == call.Plan.Path {
			n++
		}
	}
	if n > 0 {
		r.At(call.Node, "plan %s has %d problem(s), listed under %s", call.Path, n, call.Plan.Path)
	}
	return sub
}

// Sources are the plan files the program was compiled from, the run's
// and every callee's (of call steps and sub-plan tools), by path.
func (p *Program) Sources() map[string]string {
	out := map[string]string{p.Plan.Path: p.Plan.Source}
	for _, n := range p.nodes {
		if n.Sub != nil {
			for k, v := range n.Sub.Sources() {
				out[k] = v
			}
		}
	}
	for _, t := range p.tools { // sub-plan tools' callees
		if t.sub != nil {
			for k, v := range t.sub.Sources() {
				out[k] = v
			}
		}
	}
	return out
}

// globalAgent is the run's name of this program's agent name.
func (p *Program) globalAgent(name string) string {
	if p.agents == nil {
		return name
	}
	if g, ok := p.agents[name]; ok {
		return g
	}
	return name
}

// compileOutputs compiles the plan's declared outputs in its scope and
// gives their types.
func (p *Program) compileOutputs(r *plans.Reporter) types.Map {
	t := types.Map{}
	for _, o := range p.Plan.Outputs {
		e := compileValueAt(r, p.Plan.Source, o.Expr, "outputs."+o.Name, p.scope)
		if e == nil {
			t[o.Name] = types.Any
			continue
		}
		p.outputs = append(p.outputs, output{name: o.Name, expr: e})
		t[o.Name] = typeOfExpr(e)
	}
	return t
}

func typeOfExpr(e *Expr) types.Type {
	if e.load() != nil || e.typ == nil || e.typ.Kind() == reflect.Interface {
		return types.Any
	}
	return goType(e.typ)
}

// compileCallVars compiles the vars call step n passes, checking each
// against the type of the callee var's default.
func (p *Program) compileCallVars(r *plans.Reporter, n *Node) {
	call := n.Step.Call
	for _, v := range call.Vars {
		def, _ := call.Plan.VarDefault(v.Name)
		want := reflect.TypeOf(def)
		vn := plans.Resolve(v.Node)
		cv := callVar{name: v.Name}
		if vn != nil && vn.Kind == yaml.ScalarNode && vn.Tag == "!!str" && strings.Contains(vn.Value, "${{") {
			t := compileTemplateAt(r, p.Plan.Source, vn, vn.Value, p.ownScope(n))
			if t == nil {
				continue
			}
			cv.tmpl = t
			if got := t.valueType(); got != nil && !fits(want, got) {
				r.At(vn, "vars.%s: %s gives %s, but var %s of %s is %s (its default is %s)",
					v.Name, vn.Value, typeName(got), v.Name, call.Path, typeName(want), describeDefault(def))
			}
		} else {
			var lit any
			if err := vn.Decode(&lit); err != nil {
				r.At(vn, "vars.%s: %v", v.Name, err)
				continue
			}
			if got := reflect.TypeOf(lit); def != nil && !fits(want, got) {
				r.At(vn, "vars.%s: %s is %s, but var %s of %s is %s (its default is %s)",
					v.Name, describeDefault(lit), typeName(got), v.Name, call.Path, typeName(want), describeDefault(def))
			}
			cv.lit = lit
		}
		n.more().callVars = append(n.callVars, cv)
	}
}

// ownScope is the scope of n's own fields: with item and index for a
// for_each step.
func (p *Program) ownScope(n *Node) *Scope {
	if n.Step.ForEach != nil || n.inEach {
		return p.eachScope()
	}
	return p.scope
}

// fits reports whether a value of type got may stand for a var whose
// default has type want (nil: any). An int fits a float var.
func fits(want, got reflect.Type) bool {
	if want == nil || got == nil || got.Kind() == reflect.Interface {
		return true
	}
	kw, kg := want.Kind(), got.Kind()
	switch {
	case kw == kg:
		return true
	case kw == reflect.Float64 && (kg == reflect.Int || kg == reflect.Int64):
		return true
	case (kw == reflect.Slice || kw == reflect.Array) && (kg == reflect.Slice || kg == reflect.Array):
		return true
	}
	return false
}

func typeName(t reflect.Type) string {
	if t == nil {
		return "null"
	}
	switch t.Kind() {
	case reflect.String:
		return "text"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int64, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return t.String()
}

func describeDefault(v any) string {
	s := fmt.Sprintf("%v", v)
	if _, ok := v.(string); ok {
		s = fmt.Sprintf("%q", v)
	}
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return s
}

// under is node n of a callee instantiated under call label prefix: its
// label CALL/LABEL, its expressions evaluated in the call's frame. Its
// children, sequence and for_each step come along.
func (n *Node) under(prefix string) *Node {
	c := *n
	c.copyMore()
	s := *n.Step
	if c.local == "" {
		c.local = n.Label
	}
	s.Label = prefix + "/" + n.Label
	c.Step = &s
	if n.frame == "" {
		c.frame = prefix
	} else {
		c.frame = prefix + "/" + n.frame
	}
	c.Children = underAll(n.Children, prefix)
	c.Seq = underAll(n.Seq, prefix)
	if n.item != nil {
		it := *n.item
		it.each = n.item.each.under(prefix)
		c.item = &it
	}
	return &c
}

func underAll(ns []*Node, prefix string) []*Node {
	if ns == nil {
		return nil
	}
	out := make([]*Node, len(ns))
	for i, k := range ns {
		out[i] = k.under(prefix)
	}
	return out
}

// localLabel is n's label in its own plan file (its label on the board
// is CALL/LABEL for a callee's step).
func (n *Node) localLabel() string {
	if n.local != "" {
		return n.local
	}
	return n.Label
}

// AgentName is the run's name of agent name, as a step of n's plan calls
// it: a callee's agents are the caller's passed ones or its own, named
// under the call.
func (n *Node) AgentName(name string) string {
	if g, ok := n.agents[name]; ok {
		return g
	}
	return name
}

// evalOf is the evaluator n's expressions run in: the run's, or its
// call's frame.
func (r *Runner) evalOf(n *Node) *evaluator {
	if n == nil || n.frame == "" {
		return r.eval
	}
	return r.frame(n.frame, nil)
}

// frame is the evaluator of the callee run by call label prefix, made on
// first use (a resumed run fills it from the saved records before the
// call runs again); vars, when not nil, are the call's vars.
func (r *Runner) frame(prefix string, vars map[string]any) *evaluator {
	r.mu.Lock()
	e := r.frames[prefix]
	r.mu.Unlock()
	if e == nil {
		call := r.Prog.Node(prefix)
		if call != nil && call.Sub == nil && call.item != nil && call.isBlock() {
			return r.blockFrame(call, nil, false)
		}
		var sub *Program
		if call != nil {
			sub = call.Sub
		}
		if sub == nil { // not a call: a bug, but no panic
			return r.eval
		}
		base := maps.Clone(r.eval.base)
		run, _ := base["run"].(map[string]any)
		run = maps.Clone(run)
		run["plan"], run["plan_dir"] = sub.Plan.Name, planDir(sub.Plan.Path)
		base["run"] = run
		base["vars"] = calleeVars(sub.Plan, r.recordedVars(prefix))
		e = newEvaluator(sub, base)
		r.mu.Lock()
		if prev := r.frames[prefix]; prev != nil {
			e = prev
		} else {
			r.frames[prefix] = e
		}
		r.mu.Unlock()
	}
	if vars != nil {
		e.mu.Lock()
		e.base = maps.Clone(e.base)
		e.base["vars"] = vars
		e.mu.Unlock()
	}
	return e
}

// KindCallVars is the recording of the vars a call visit passed its
// callee (Response: CallRecord as JSON). A worker elsewhere (Temporal's
// activity) running one of the callee's steps builds the call's frame
// from it; the values are taken through JSON in this process too, so
// both engines see the same (numbers as float64).
const KindCallVars = "vars"

// CallRecord is what a call visit records: the callee file's SHA-256 as
// it was loaded (runner resume refuses a callee changed since) and the
// vars passed.
type CallRecord struct {
	PlanSHA256 string         `json:"plan_sha256"`
	Vars       map[string]any `json:"vars"`
}

// CallChanged says, for a saved run's recordings, the first call whose
// callee file is not the one it ran (nil: none changed): what runner
// resume refuses without --force.
func (p *Program) CallChanged(recs []board.Recording) error {
	for _, rec := range recs {
		if rec.Kind != KindCallVars {
			continue
		}
		var cr CallRecord
		n := p.Node(rec.Label)
		if n == nil || n.Sub == nil || json.Unmarshal(rec.Response, &cr) != nil {
			continue
		}
		if sha := n.Sub.Plan.SHA256; cr.PlanSHA256 != "" && sha != cr.PlanSHA256 {
			return fmt.Errorf("plan %s, called by step %s, changed since the call ran (sha256 %.12s…, was %.12s…)",
				n.Sub.Plan.Path, rec.Label, sha, cr.PlanSHA256)
		}
	}
	return nil
}

// callVarsRecorded records a call visit's vars, once (a resumed call
// visit has them already), and gives them back as JSON values.
func (r *Runner) callVarsRecorded(n *Node, visit int, vars map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(CallRecord{PlanSHA256: n.Sub.Plan.SHA256, Vars: vars})
	if err != nil {
		return nil, fmt.Errorf("vars: a value cannot be saved as JSON: %w", err)
	}
	found := false
	for _, rec := range r.Board.Recordings() {
		if rec.Kind == KindCallVars && rec.Label == n.Label && rec.Visit == visit {
			found = true
		}
	}
	if !found {
		if err := r.Board.AddRecording(board.Recording{Label: n.Label, Visit: visit, Kind: KindCallVars, Call: 1, Response: raw}); err != nil {
			return nil, err
		}
	}
	var out CallRecord
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out.Vars, nil
}

// recordedVars are the vars the last recorded visit of call label
// passed (nil: none recorded).
func (r *Runner) recordedVars(label string) map[string]any {
	var out map[string]any
	for _, rec := range r.Board.Recordings() {
		if rec.Kind == KindCallVars && rec.Label == label {
			var cr CallRecord
			if json.Unmarshal(rec.Response, &cr) == nil {
				out = cr.Vars
			}
		}
	}
	return out
}

// calleeVars are the callee's vars: its defaults, over which the call's
// values go.
func calleeVars(p *plans.Plan, given map[string]any) map[string]any {
	out := map[string]any{}
	for _, v := range p.Vars {
		out[v.Name] = v.Default
	}
	maps.Copy(out, given)
	return out
}

// call runs a call visit: the callee's top-level steps in order as the
// call's children (a goto stays among them), then its outputs.
func (it *interp[C]) call(c C, n *Node, visit int, vc *visitClock) (Result, error) {
	r := it.r
	given := map[string]any{}
	for _, v := range n.callVars {
		if v.tmpl == nil {
			given[v.name] = v.lit
			continue
		}
		val, err := r.evalOf(n).value(v.tmpl, vc)
		if err != nil {
			return Result{}, fmt.Errorf("vars.%s: %w", v.name, err)
		}
		given[v.name] = val
	}
	vars, err := r.callVarsRecorded(n, visit, calleeVars(n.Sub.Plan, given))
	if err != nil {
		return Result{}, err
	}
	fr := r.frame(n.Label, vars)
	kids := underAll(n.Sub.Steps, n.Label)
	for pc := 0; pc < len(kids); {
		ch := kids[pc]
		if err = it.halted(c, n.Label, ch); err != nil {
			break // the run stopped, or a step of another branch failed: the rest does not start
		}
		var jump string
		if rec, ok := r.alreadyDone(n.Label, ch.Label); ok {
			jump = rec.Goto
		} else if jump, err = it.visit(c, ch, n.Label); err != nil {
			break
		}
		if pc, err = n.Sub.Next(pc, jump); err != nil {
			var re *RunError
			if errors.As(err, &re) && !re.Fatal {
				re.Label = kids[min(pc, len(kids)-1)].Label
			}
			break
		}
	}
	if err != nil {
		return Result{}, err
	}
	outputs := map[string]any{}
	for _, o := range n.Sub.outputs {
		var v any
		oerr := fr.withRefs(o.expr.stepRefs(), nil, vc, func(env map[string]any) (e error) {
			v, e = o.expr.Eval(env)
			return e
		})
		if oerr != nil {
			return Result{}, fmt.Errorf("outputs.%s of %s: %w", o.name, n.Step.Call.Path, oerr)
		}
		outputs[o.name] = jsonValue(v)
	}
	return Result{Output: outputs, Fields: &PlanResult{Outputs: outputs}}, nil
}

// jsonValue is v as it comes back from blackboard.json, so a call's
// outputs are the same in this run, a resumed one and a replay.
func jsonValue(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Sprint(v)
	}
	return out
}

// Callees lists the labels of the plan's call steps with their programs
// (for the graph and the dry run), in plan order.
func (p *Program) Callees() []string {
	var out []string
	for l, n := range p.nodes {
		if n.Sub != nil {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

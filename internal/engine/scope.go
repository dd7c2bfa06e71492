package engine

import (
	"maps"
	"reflect"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/checker/nature"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/types"
	"github.com/planrunner/runner/internal/plans"
)

// A step's state as expressions see it: steps.<label>.<field>. The common
// fields come first; the type's result fields are added beside them.
var commonStateTypes = types.Map{
	"status":      types.String,
	"ok":          types.Bool,
	"failed":      types.Bool,
	"skipped":     types.Bool,
	"output":      types.Any,
	"error":       types.String,
	"visits":      types.Int,
	"duration_ms": types.Int,
	"timed_out":   types.Bool,
}

// stepStateType is the expression type of steps.<label> for a step of type t
// (nil for a parallel group).
func stepStateType(t Type) types.Map {
	m := types.Map{}
	if t != nil {
		if rt := reflect.TypeOf(t.Result()); rt != nil {
			for name, ft := range structType(indirect(rt)) {
				m[name] = ft
			}
		}
	}
	for k, v := range commonStateTypes {
		m[k] = v
	}
	if ot, ok := t.(OutputTyper); ok {
		m["output"] = goType(reflect.TypeOf(ot.OutputType()))
	}
	return m
}

// Scope is the typed environment expressions are checked against, as
// expr's type description, built once: types.Map.Nature walks the whole
// map, so building it per expression made loading quadratic in the
// steps. It keeps the description alone, not the types.Map it was made
// from: a program keeps its scope to compile its expressions again, and
// the map, an entry a label, was as large again.
type Scope struct {
	nature nature.Nature
	// steps describes steps.<label> for a plan's scope (planScope), where
	// nature has no label in steps; nil in a scope made from a type map
	// alone (newScope), whose nature holds all of it.
	steps *stepsDescription
	conf  [2]*conf.Config // for any value, for booleans; built on first use
	// secretEnv are the plan's env names whose value is made from a
	// secret: reading env.NAME reads a secret (see Expr.secret).
	secretEnv map[string]bool
	// deferred: the plan was checked whole before (CompileChecked), so
	// its expressions are compiled on first use (Expr.load), one at a
	// time under mu: conf and expr's type cache in it are filled then.
	deferred bool
	mu       sync.Mutex
	// compiled are the expressions checked in this scope by source,
	// while the plan compiles (nil otherwise): the same expression
	// written in many steps (vars.who, steps.build.ok) is type-checked
	// and compiled once, its program shared (a vm.Program is read-only
	// when run). Only the plan's own scope has one.
	compiled map[exprKey]checked
	// defs are what the expressions compiled in this scope say of it
	// (Expr.deferred), for any value and for booleans: one each, not one
	// an expression.
	defs     [2]deferredExpr
	defsOnce sync.Once
	// progs holds the compiled programs of the expressions of the plan
	// this scope belongs to (shared with the scopes made from it).
	progs *progCache
	// stepScopes are the scopes of retry.until made from this one, by the
	// description of the step they name (withStep).
	stepScopes map[uintptr]*Scope
	// namedConf checks an expression with the steps it names described
	// (configFor), in namedEnv, a copy of the scope's names whose steps
	// is set for each, under namedMu.
	namedMu   sync.Mutex
	namedEnv  *nature.TypeData
	namedConf [2]*conf.Config
}

// deferredFor is the scope's deferredExpr for values or booleans.
func (s *Scope) deferredFor(asBool bool) *deferredExpr {
	s.defsOnce.Do(func() { s.defs = [2]deferredExpr{{s, false}, {s, true}} })
	if asBool {
		return &s.defs[1]
	}
	return &s.defs[0]
}

// exprKey names a compiled expression within its scope.
type exprKey struct {
	src    string
	asBool bool
}

// config is the compiler configuration for this scope, built once:
// expr.Compile builds a fresh one (every builtin into a new map) for each
// expression, a fifth of the time of loading a large plan.
func (s *Scope) config(asBool bool) *conf.Config {
	i := 0
	if asBool {
		i = 1
	}
	if s.conf[i] == nil {
		c := conf.CreateNew()
		s.option()(c)
		if asBool {
			expr.AsBool()(c)
		}
		for name := range c.Disabled {
			delete(c.Builtins, name)
		}
		c.Check()
		s.conf[i] = c
	}
	return s.conf[i]
}

func newScope(m types.Map) *Scope {
	return natureScope(natureOf(m, map[uintptr]nature.Nature{}))
}

// planScope is the scope of plan p's expressions: its names, and each
// step's state, described when an expression names the step. calls are
// the types of the outputs of its calls, by label.
func planScope(p *plans.Plan, reg *Registry, calls map[string]types.Map) *Scope {
	s := newScope(scopeType(p))
	s.steps = &stepsDescription{plan: p, reg: reg, calls: calls,
		byType: map[string]types.Map{}, eachOf: map[string]types.Map{}, memo: map[uintptr]nature.Nature{}}
	return s
}

func natureScope(nt nature.Nature) *Scope {
	return &Scope{nature: nt, progs: newProgCache()}
}

// field is the description of name in the scope (a zero Nature: none).
func (s *Scope) field(name string) nature.Nature {
	return s.nature.Fields[name]
}

// natureOf is t.Nature(), with the description of each distinct map built
// once: every step of a type shares one state type, so a plan of 10,000
// steps needs a handful of descriptions, not 10,000.
func natureOf(t types.Type, memo map[uintptr]nature.Nature) nature.Nature {
	m, ok := t.(types.Map)
	if !ok {
		return t.Nature()
	}
	key := reflect.ValueOf(m).Pointer()
	if nt, ok := memo[key]; ok {
		return nt
	}
	if _, extra := m[types.Extra]; extra {
		nt := m.Nature()
		memo[key] = nt
		return nt
	}
	fields := make(map[string]nature.Nature, len(m))
	for k, v := range m {
		fields[k] = natureOf(v, memo)
	}
	nt := mapNature(fields)
	memo[key] = nt
	return nt
}

// mapNature describes a map with these fields and no others: a copy of
// emptyMap's description (types.Map{}.Nature() builds one through
// reflection, a third of describing the steps an expression names).
func mapNature(fields map[string]nature.Nature) nature.Nature {
	nt := emptyMap()
	td := *nt.TypeData
	td.Fields = fields
	nt.TypeData = &td
	return nt
}

var emptyMap = sync.OnceValue(func() nature.Nature { return types.Map{}.Nature() })

// option hands the prebuilt description to the expr compiler.
func (s *Scope) option() expr.Option {
	return func(c *conf.Config) {
		c.Env = s.nature
		c.Strict = s.nature.Strict
	}
}

// with is the scope plus one more top-level name of description t,
// sharing everything else (retry.until sees its own step as `step`).
func (s *Scope) with(name string, t nature.Nature) *Scope {
	nt := s.nature
	td := *nt.TypeData
	td.Fields = make(map[string]nature.Nature, len(s.nature.Fields)+1)
	for k, v := range s.nature.Fields {
		td.Fields[k] = v
	}
	td.Fields[name] = t
	nt.TypeData = &td
	return &Scope{nature: nt, steps: s.steps, secretEnv: s.secretEnv, deferred: s.deferred, progs: s.progs}
}

// withStep is the scope of a retry.until: this one with its step as
// `step`, shared by the steps of one type. A scope holds the compiler's
// configuration once it compiles, a few kilobytes: one per step with a
// retry.until was most of what a plan of them kept per step.
func (s *Scope) withStep(t nature.Nature) *Scope {
	if t.TypeData == nil {
		return s.with("step", t)
	}
	// Steps of one type share one description (natureOf).
	key := uintptr(unsafe.Pointer(t.TypeData))
	if w, ok := s.stepScopes[key]; ok {
		return w
	}
	w := s.with("step", t)
	if s.stepScopes == nil {
		s.stepScopes = map[uintptr]*Scope{}
	}
	s.stepScopes[key] = w
	return w
}

// stepType is the description of steps.<label>, or Any's when there is
// none.
func (s *Scope) stepType(label string) nature.Nature {
	if s.steps != nil {
		if t, ok := s.steps.of(label); ok {
			return t
		}
	} else if t, ok := s.field("steps").Fields[label]; ok {
		return t
	}
	return types.Any.Nature()
}

// configFor is the configuration to check tree with (cfg is the
// scope's, config(asBool)): steps described as far as the expression
// names them (all of them if it uses steps otherwise), so the checker
// sees the same description of every step it reads. When locked, the
// configuration is the scope's one for named steps, set for this
// expression: the caller holds it, and unlocks namedMu, until the
// expression is compiled. Copying the scope's names for each
// expression instead was a fifth of compiling one.
func (s *Scope) configFor(asBool bool, cfg *conf.Config, tree *parser.Tree) (c *conf.Config, locked bool) {
	if s.steps == nil {
		return cfg, false
	}
	refs := namedSteps(&tree.Node)
	if !refs.all && len(refs.labels) == 0 {
		return cfg, false
	}
	steps := s.steps.named(refs)
	i := 0
	if asBool {
		i = 1
	}
	s.namedMu.Lock()
	if s.namedEnv == nil {
		td := *s.nature.TypeData
		td.Fields = maps.Clone(s.nature.Fields)
		s.namedEnv = &td
	}
	if s.namedConf[i] == nil {
		c := *cfg
		c.Env.TypeData = s.namedEnv
		s.namedConf[i] = &c
	}
	s.namedEnv.Fields["steps"] = steps
	return s.namedConf[i], true
}

// whole is the scope's nature with every step described: for the
// names a misspelt one may have meant.
func (s *Scope) whole() nature.Nature {
	if s.steps == nil {
		return s.nature
	}
	return s.withSteps(s.steps.all())
}

// withSteps is the scope's nature with steps described as steps.
func (s *Scope) withSteps(steps nature.Nature) nature.Nature {
	nt := s.nature
	td := *nt.TypeData
	td.Fields = maps.Clone(nt.Fields)
	td.Fields["steps"] = steps
	nt.TypeData = &td
	return nt
}

// stepsDescription describes steps.<label> a label at a time: each
// expression is checked against the steps it names (Scope.configFor),
// so a plan keeps no description of every label, which at 100k steps
// was a tenth of a run's memory. Steps of one type share one.
type stepsDescription struct {
	plan  *plans.Plan
	reg   *Registry
	calls map[string]types.Map

	mu     sync.Mutex
	byType map[string]types.Map // a type's state
	eachOf map[string]types.Map // a for_each step's of that type
	memo   map[uintptr]nature.Nature
	every  *nature.Nature // all labels, built when first needed
}

// of is the description of steps.<label>, if the plan has that label.
func (d *stepsDescription) of(label string) (nature.Nature, bool) {
	if label == "" {
		return nature.Nature{}, false
	}
	s := d.plan.Lookup(label)
	if s == nil {
		return nature.Nature{}, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.natureOf(s), true
}

// named describes the steps refs names, or all of them.
func (d *stepsDescription) named(refs stepRefs) nature.Nature {
	if refs.all {
		return d.all()
	}
	fields := make(map[string]nature.Nature, len(refs.labels))
	for _, label := range refs.labels {
		if nt, ok := d.of(label); ok {
			fields[label] = nt
		}
	}
	return mapNature(fields)
}

// all describes every step, for an expression that uses steps whole.
func (d *stepsDescription) all() nature.Nature {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.every == nil {
		fields := map[string]nature.Nature{}
		for _, s := range d.plan.AllSteps() {
			if s.Label != "" {
				fields[s.Label] = d.natureOf(s)
			}
		}
		nt := mapNature(fields)
		d.every = &nt
	}
	return *d.every
}

// natureOf describes step s's state; under mu.
func (d *stepsDescription) natureOf(s *plans.Step) nature.Nature {
	st, ok := d.byType[s.Type]
	if !ok {
		st = stepStateType(d.reg.lookupType(s.Type))
		d.byType[s.Type] = st
	}
	if s.Call != nil {
		// A call's outputs are typed by the callee's expressions. Its
		// map is its own, made now: described without the memo, whose
		// keys are the addresses of maps that live as long as it.
		st = maps.Clone(st)
		outs := d.calls[s.Label]
		if outs == nil {
			outs = types.Map{}
		}
		st["outputs"], st["output"] = outs, outs
		if s.ForEach != nil {
			st = eachStateType(st)
		}
		return natureOf(st, map[uintptr]nature.Nature{})
	}
	if s.ForEach != nil {
		et, ok := d.eachOf[s.Type]
		if !ok {
			et = eachStateType(st)
			d.eachOf[s.Type] = et
		}
		st = et
	}
	return natureOf(st, d.memo)
}

// scopeType is the typed environment every expression of the plan is
// checked against, so a misspelt name is an error at load time, but for
// its steps: `steps` is described by planScope's stepsDescription, a
// label at a time.
func scopeType(p *plans.Plan) types.Map {
	vars := types.Map{}
	for _, v := range p.Vars {
		vars[v.Name] = valueType(v.Default)
	}
	env := types.Map{}
	for _, e := range p.Env {
		env[e.Name] = types.String
	}
	steps := types.Map{}
	m := types.Map{
		"vars":    vars,
		"env":     env,
		"secrets": secretsType(p),
		"steps":   steps,
		"run": types.Map{
			"id": types.String, "plan": types.String, "plan_dir": types.String, "started_at": types.String, "workdir": types.String,
		},
		"board":   types.TypeOf(func(string) any { return nil }),
		"entries": types.TypeOf(func(string) []any { return nil }),
		// conflicts(key): the conflict entries recorded for key ("": all).
		"conflicts": types.TypeOf(func(string) []any { return nil }),
		// now() replaces expr's builtin: it reads the step visit's recorded clock.
		"now": types.TypeOf(func() time.Time { return time.Time{} }),
	}
	for k, v := range workspaceTypes {
		m[k] = v
	}
	return m
}

// valueType is the expression type of a YAML value.
func valueType(v any) types.Type {
	switch v.(type) {
	case nil:
		return types.Any
	case int:
		return types.Int
	case float64:
		return types.Float64
	case string:
		return types.String
	case bool:
		return types.Bool
	case []any:
		// A list of any items: --var may give another list (convertVar).
		return types.Array(types.Any)
	case map[string]any:
		// A mapping of any keys: --var may give other keys, so they are
		// not checked, but it stays a mapping (convertVar).
		return types.TypeOf(map[string]any{})
	}
	return types.Any // others (a YAML timestamp): checked at run time
}

// structType describes a result struct by its json names.
func structType(rt reflect.Type) types.Map {
	m := types.Map{}
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		name, ok := jsonName(f)
		if !ok {
			continue
		}
		m[name] = goType(f.Type)
	}
	return m
}

var timeType = reflect.TypeOf(time.Time{})

func goType(t reflect.Type) types.Type {
	t = indirect(t)
	switch t.Kind() {
	case reflect.Bool:
		return types.Bool
	case reflect.String:
		return types.String
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return types.Int
	case reflect.Float32, reflect.Float64:
		return types.Float64
	case reflect.Struct:
		if t == timeType {
			return types.String
		}
		return structType(t)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return types.String
		}
		return types.Array(goType(t.Elem()))
	}
	return types.Any
}

func jsonName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, true
}

// toValue turns a result struct into the maps and slices expressions read,
// keyed by json names, with the types structType promised.
func toValue(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == timeType {
			return v.Interface().(time.Time).Format(time.RFC3339Nano)
		}
		m := make(map[string]any, v.NumField())
		for i := 0; i < v.NumField(); i++ {
			if name, ok := jsonName(v.Type().Field(i)); ok {
				m[name] = toValue(v.Field(i))
			}
		}
		return m
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return string(v.Bytes())
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = toValue(v.Index(i))
		}
		return out
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int(v.Uint())
	case reflect.Float32, reflect.Float64:
		return v.Float()
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
	}
	if !v.CanInterface() {
		return nil
	}
	return v.Interface()
}

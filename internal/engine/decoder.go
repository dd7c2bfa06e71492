package engine

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine/shellsafe"
	"github.com/planrunner/runner/internal/plans"
	"gopkg.in/yaml.v3"
)

// Decoder gives a step type its own fields of one step, and collects the
// problems it finds with their line and column. Every accessor marks its
// key as known, present or not, so that any other key is reported as
// unknown (with a "did you mean") once the type is done.
type Decoder struct {
	Plan  *plans.Plan
	Step  *plans.Step
	r     *plans.Reporter
	scope *Scope
	// field are the step's own fields (the common ones left out), in
	// the file's order, and known the keys the type asked for, each
	// once. Both are short lists searched in place: a map of each per
	// step was a quarter of the bytes a large plan's compile allocated.
	field   []plans.Field
	known   []string
	missing []string  // required keys not given, reported by finish
	spec    *TypeSpec // the type's description; nil for a type without one
	before  int       // problems reported before this step's, to tell its own
}

func newDecoder(p *plans.Plan, s *plans.Step, r *plans.Reporter, scope *Scope) *Decoder {
	d := &Decoder{Plan: p, Step: s, r: r, scope: scope, before: len(r.List)}
	var quiet plans.Reporter // the plans package reported these fields' problems
	all := plans.Fields(&quiet, s.Node, "")
	d.field = all[:0]
	for _, f := range all {
		if !slices.Contains(plans.CommonStepFields, f.Key) {
			d.field = append(d.field, f)
		}
	}
	return d
}

// Label is the step's label.
func (d *Decoder) Label() string { return d.Step.Label }

// Node returns the value of key, or nil when the step does not have it.
func (d *Decoder) Node(key string) *yaml.Node {
	if !slices.Contains(d.known, key) {
		if d.known == nil && d.spec != nil {
			d.known = make([]string, 0, len(d.spec.Fields))
		}
		d.known = append(d.known, key)
		if d.spec != nil && d.spec.Field(key) == nil {
			d.bug("reads field %q, which its TypeSpec does not describe", key)
		}
	}
	for i := range d.field {
		if d.field[i].Key == key {
			return plans.Resolve(d.field[i].Value)
		}
	}
	return nil
}

// bug reports a step type that disagrees with its own TypeSpec: every
// plan using the type fails to load, and CheckType fails in the type's
// tests, so the description cannot drift from what Decode does.
func (d *Decoder) bug(format string, args ...any) {
	d.Errorf(nil, "step type %s %s (a bug in the step type)", d.Step.Type, fmt.Sprintf(format, args...))
}

// described checks that the spec gives key a kind the accessor reads, and
// that the default Decode passes is the spec's (when it names one).
func (d *Decoder) described(key, accessor string, def any) {
	f := d.spec.Field(key)
	if f == nil {
		return // Node reports it
	}
	if kinds := accessorKinds(accessor); f.Kind != KindOther && !slices.Contains(kinds, f.Kind) {
		d.bug("reads field %q with %s, but its TypeSpec says it is of kind %s", key, accessor, f.Kind)
	}
	if f.Default != nil && def != nil && f.Default != def {
		d.bug("takes %v when field %q is absent, but its TypeSpec says %v", def, key, f.Default)
	}
}

// Has reports whether the step has key (and marks it known).
func (d *Decoder) Has(key string) bool { return d.Node(key) != nil }

// Errorf reports a problem at n (the step itself when n is nil).
func (d *Decoder) Errorf(n *yaml.Node, format string, args ...any) {
	if n == nil {
		n = d.Step.Node
	}
	d.r.At(n, format, args...)
}

// Reporter is where problems go, for helpers of the plans package.
func (d *Decoder) Reporter() *plans.Reporter { return d.r }

// Required reports key as missing when the step does not have it.
func (d *Decoder) Required(key string) bool {
	if d.Node(key) == nil {
		d.missing = append(d.missing, key)
		return false
	}
	return true
}

// String reads a plain string field ("" when absent).
func (d *Decoder) String(key string) string {
	if d.spec != nil {
		d.described(key, "String", nil)
	}
	n := d.Node(key)
	if n == nil {
		return ""
	}
	s, _ := plans.String(d.r, n, key)
	return s
}

// Enum reads a string field that must be one of allowed (def when absent).
// Without allowed, the values are the TypeSpec's Enum for key.
func (d *Decoder) Enum(key, def string, allowed ...string) string {
	if d.spec != nil {
		var dv any
		if def != "" {
			dv = def
		}
		d.described(key, "Enum", dv)
		if f := d.spec.Field(key); f != nil {
			if len(allowed) == 0 {
				allowed = f.Enum
			} else if !slices.Equal(allowed, f.Enum) {
				d.bug("allows %v for field %q, but its TypeSpec says %v", allowed, key, f.Enum)
			}
		}
	}
	n := d.Node(key)
	if n == nil {
		return def
	}
	s, ok := plans.String(d.r, n, key)
	if !ok {
		return def
	}
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	d.Errorf(n, "%s: %q is not one of %v%s", key, s, allowed, plans.Suggest(s, allowed))
	return def
}

// Bool reads a boolean field.
func (d *Decoder) Bool(key string, def bool) bool {
	if d.spec != nil {
		d.described(key, "Bool", def)
	}
	n := d.Node(key)
	if n == nil {
		return def
	}
	b, ok := plans.Bool(d.r, n, key)
	if !ok {
		return def
	}
	return b
}

// Int reads a whole-number field.
func (d *Decoder) Int(key string, def int) int {
	if d.spec != nil {
		d.described(key, "Int", def)
	}
	n := d.Node(key)
	if n == nil {
		return def
	}
	v, ok := plans.Int(d.r, n, key)
	if !ok {
		return def
	}
	return v
}

// Duration reads a duration field (0 when absent).
func (d *Decoder) Duration(key string) time.Duration {
	if d.spec != nil {
		d.described(key, "Duration", nil)
	}
	n := d.Node(key)
	if n == nil {
		return 0
	}
	v, _ := plans.Duration(d.r, n, key)
	return v
}

// Template reads a string field that may hold ${{ }} (nil when absent).
func (d *Decoder) Template(key string) *Template {
	if d.spec != nil {
		d.described(key, "Template", nil)
	}
	n := d.Node(key)
	if n == nil {
		return nil
	}
	return d.TemplateAt(n, key)
}

// KeyTemplate reads a board key (a template): one without ${{ }} is
// checked as the board will check it (board.CheckKey), so `validate`
// refuses it at its line and column rather than the run at the step.
func (d *Decoder) KeyTemplate(key string) *Template {
	t := d.Template(key)
	CheckKeyTemplate(d.r, d.Node(key), t, key)
	return t
}

// CheckKeyTemplate reports at n a literal key template the board would
// refuse.
func CheckKeyTemplate(r *plans.Reporter, n *yaml.Node, t *Template, field string) {
	if t == nil || n == nil {
		return
	}
	if lit, ok := t.Literal(); ok {
		if err := board.CheckKey(lit); err != nil {
			r.At(n, "%s: %s", field, strings.TrimSuffix(err.Error(), ": "+board.ErrBadKey.Error()))
		}
	}
}

// TemplateAt compiles the string at n as a template.
func (d *Decoder) TemplateAt(n *yaml.Node, what string) *Template {
	s, ok := plans.String(d.r, n, what)
	if !ok {
		return nil
	}
	t := compileTemplateAt(d.r, d.Plan.Source, n, s, d.scope)
	if t != nil {
		t.field = what
	}
	return t
}

// ShellTemplate reads a shell script that may hold ${{ }} (nil when
// absent), for StepContext.EvalShell. Where a value cannot stand safely in
// the script, the plan does not load.
func (d *Decoder) ShellTemplate(key string) *Template {
	if d.spec != nil {
		d.described(key, "ShellTemplate", nil)
	}
	n := d.Node(key)
	if n == nil {
		return nil
	}
	s, ok := plans.String(d.r, n, key)
	if !ok {
		return nil
	}
	if strings.TrimSpace(s) == "" {
		// sh would run nothing and succeed: never what a step means.
		d.r.At(n, "%s is empty: give the command to run", key)
		return nil
	}
	t := compileTemplateAt(d.r, d.Plan.Source, n, s, d.scope)
	if t == nil {
		return nil
	}
	t.field = key
	sp, errs := shellsafe.Prepare(t.shellSegments())
	for _, e := range errs {
		line, col := scalarPos(d.Plan.Source, n, t.parts[e.Segment].off+e.Offset)
		d.r.AtPos(line, col, "%s: %s", key, e.Msg)
	}
	if len(errs) > 0 {
		return nil
	}
	t.shell = sp
	return t
}

// ExprAt compiles the bare boolean expression at n (as in `when:`).
func (d *Decoder) ExprAt(n *yaml.Node, what string) *Expr {
	return compileBoolAt(d.r, d.Plan.Source, &plans.Expr{Src: n.Value, Node: n}, what, d.scope)
}

// Env reads a mapping of environment variables whose values may hold ${{ }}.
func (d *Decoder) Env(key string) []EnvTemplate {
	if d.spec != nil {
		d.described(key, "Env", nil)
	}
	n := d.Node(key)
	if n == nil {
		return nil
	}
	var out []EnvTemplate
	for _, f := range plans.Fields(d.r, n, key) {
		if !plans.ValidIdent(f.Key) {
			d.Errorf(f.KeyN, "%s: %q is not an environment variable name", key, f.Key)
			continue
		}
		if t := d.TemplateAt(f.Value, key+"."+f.Key); t != nil {
			out = append(out, EnvTemplate{Name: f.Key, Value: t})
		}
	}
	return out
}

// EnvTemplate is one environment variable whose value is a template.
type EnvTemplate struct {
	Name  string
	Value *Template
}

// finish reports the fields the type did not ask for.
func (d *Decoder) finish() {
	var known []string // for suggestions, built at the first unknown field
	var explained map[string]bool
	for _, f := range d.field {
		key := f.Key
		if slices.Contains(d.known, key) {
			continue
		}
		if d.spec.Field(key) != nil {
			// Described, not read: the type stopped at an earlier problem
			// of this step (board with a bad op does not look at its key),
			// which is the one to report. Without one, the type is wrong.
			if len(d.r.List) == d.before {
				d.bug("did not read field %q, which its TypeSpec describes", key)
			}
			continue
		}
		if known == nil {
			names := d.known
			if d.spec != nil {
				names = d.spec.Names()
			}
			known = append(append([]string{}, plans.CommonStepFields...), names...)
			explained = map[string]bool{}
		}
		d.r.At(f.KeyN, "unknown field %q in step %q (type %s)%s", key, d.Step.Label, d.Step.Type, plans.Suggest(key, known))
		// A misspelt required field is one mistake, not two.
		for _, m := range d.missing {
			if plans.Suggest(key, []string{m}) != "" {
				explained[m] = true
			}
		}
	}
	for _, m := range d.missing {
		if !explained[m] {
			d.Errorf(nil, "step %q (type %s) is missing required field %q", d.Step.Label, d.Step.Type, m)
		}
	}
}

// compileTemplateAt compiles a template and reports each bad ${{ }} at its
// own line and column.
func compileTemplateAt(r *plans.Reporter, src string, n *yaml.Node, s string, scope *Scope) *Template {
	t, errs := compileTemplate(s, scope)
	for _, e := range errs {
		line, col := scalarPos(src, n, e.offset)
		r.AtPos(line, col, "%s", e.msg)
	}
	if len(errs) > 0 {
		return nil
	}
	return t
}

// compileBoolAt compiles a bare boolean expression (if, when, until). A
// ${{ }} wrapper is accepted too, as GitHub Actions users write it.
func compileBoolAt(r *plans.Reporter, src string, x *plans.Expr, what string, scope *Scope) *Expr {
	code, off := x.Src, 0
	if t := trimWrapper(code); t != code {
		off = len(code) - len(trimLeftWrapper(code))
		code = t
	}
	e, err := compileExpr(code, scope, true)
	if err != nil {
		line, col := scalarPos(src, x.Node, off+max(exprErrorColumn(err), 0))
		r.AtPos(line, col, "%s: %s", what, exprMessage(code, err, scope))
		return nil
	}
	return e
}

// compileValueAt compiles a bare expression giving any value (for_each).
// A ${{ }} wrapper is accepted too.
func compileValueAt(r *plans.Reporter, src string, x *plans.Expr, what string, scope *Scope) *Expr {
	code, off := x.Src, 0
	if t := trimWrapper(code); t != code {
		off = len(code) - len(trimLeftWrapper(code))
		code = t
	}
	e, err := compileExpr(code, scope, false)
	if err != nil {
		line, col := scalarPos(src, x.Node, off+max(exprErrorColumn(err), 0))
		r.AtPos(line, col, "%s: %s", what, exprMessage(code, err, scope))
		return nil
	}
	return e
}

// TypeFields lists the fields step type typ reads beside the common ones,
// as its Decode asks for them: what a tool such as the plan's JSON Schema
// must allow for the type, so the two cannot drift apart.
func TypeFields(reg *Registry, typ string) ([]string, error) {
	t, ok := reg.Lookup(typ)
	if !ok {
		return nil, fmt.Errorf("no step type %q", typ)
	}
	read, _, err := decodeEmpty(t)
	if err != nil {
		return nil, err
	}
	sort.Strings(read)
	return read, nil
}

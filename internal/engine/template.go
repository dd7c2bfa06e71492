package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
	"github.com/planrunner/runner/internal/engine/shellsafe"
	"github.com/planrunner/runner/internal/plans"
	"gopkg.in/yaml.v3"
)

// Expr is a compiled expression.
type Expr struct {
	Src string
	// deferred is set on an expression of a plan compiled by
	// CompileChecked: it is type-checked and compiled on first use
	// (load), under once, so parallel steps may be the first together.
	deferred *deferredExpr
	once     sync.Once
	err      error // the deferred compile's error
	prog     *vm.Program
	// secret: it reads a secret (secrets.NAME, or a plan env value made
	// from one), so Runner.SecretEval decides it (see Eval).
	secret bool
	// typ is the type the checker gave it (nil: unknown), for a call's
	// vars and a callee's outputs.
	typ reflect.Type
	// refs are the steps it names (see stepRefs), found on first need:
	// validate and a run's start never need them.
	refs     stepRefs
	refsOnce sync.Once
}

// stepRefs are the steps an expression may read: the labels it names as
// steps.LABEL or steps["LABEL"], or all of them when it uses `steps`
// any other way. A resumed run builds the views of those only.
type stepRefs struct {
	labels []string
	all    bool
}

// stepRefs are the steps e names; all when it cannot be compiled (its
// evaluation fails anyway).
func (e *Expr) stepRefs() stepRefs {
	if e.load() != nil || e.prog == nil {
		return stepRefs{all: true}
	}
	e.refsOnce.Do(func() {
		root := e.prog.Node()
		e.refs = namedSteps(&root)
	})
	return e.refs
}

// refs are the steps the template's expressions name.
func (t *Template) refs() stepRefs {
	var out stepRefs
	n := 0
	for _, p := range t.parts {
		if p.expr == nil {
			continue
		}
		r := p.expr.stepRefs()
		if r.all {
			return r
		}
		if n++; n == 1 {
			out.labels = r.labels
		} else {
			out.labels = append(out.labels[:len(out.labels):len(out.labels)], r.labels...)
		}
	}
	return out
}

// namedSteps finds the steps an expression's tree names.
func namedSteps(root *ast.Node) stepRefs {
	f := &stepsFinder{}
	ast.Walk(root, f)
	f.refs.all = f.uses > len(f.refs.labels)
	return f.refs
}

type stepsFinder struct {
	refs stepRefs
	uses int // identifiers `steps`, named or not
}

func (f *stepsFinder) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.IdentifierNode:
		if x.Value == "steps" {
			f.uses++
		}
	case *ast.MemberNode:
		if id, ok := x.Node.(*ast.IdentifierNode); ok && id.Value == "steps" {
			if p, ok := x.Property.(*ast.StringNode); ok {
				f.refs.labels = append(f.refs.labels, p.Value)
			}
		}
	}
}

// Template is a string with ${{ expr }} parts, compiled.
type Template struct {
	Src   string
	parts []part
	shell *shellsafe.Script // set for shell scripts (ShellTemplate)
	// field is the plan field it came from ("prompt", "env.X"): a step's
	// rendered inputs are saved under it, for the run report.
	field string
}

type part struct {
	lit  string
	expr *Expr // nil for a literal
	off  int   // byte offset of the part in Src
}

// deferredExpr is what compiling an expression later takes.
type deferredExpr struct {
	scope  *Scope
	asBool bool
}

// compileExpr compiles src against the scope; asBool requires a boolean.
// It is expr.Compile with the scope's configuration reused. In a scope of
// a plan already checked (Scope.deferred) it only notes what to compile.
func compileExpr(src string, scope *Scope, asBool bool) (*Expr, error) {
	if scope.deferred {
		return &Expr{Src: src, deferred: &deferredExpr{scope, asBool}}, nil
	}
	return compileNow(src, scope, asBool)
}

// load compiles a deferred expression, once. A plan that was checked
// whole when its run started has no error here unless the expression
// language changed under it; then the step using it fails, saying so.
func (e *Expr) load() error {
	if e.deferred == nil {
		return nil
	}
	e.once.Do(func() {
		d := e.deferred
		// The scope's configuration holds expr's type cache, which
		// checking fills: one compile at a time per scope.
		d.scope.mu.Lock()
		defer d.scope.mu.Unlock()
		c, err := compileNow(e.Src, d.scope, d.asBool)
		if err != nil {
			e.err = fmt.Errorf("%s: %s", e.Src, exprMessage(err, d.scope))
			return
		}
		e.prog, e.secret, e.typ = c.prog, c.secret, c.typ
	})
	return e.err
}

func compileNow(src string, scope *Scope, asBool bool) (*Expr, error) {
	if c := scope.compiled[exprKey{src, asBool}]; c != nil {
		return &Expr{Src: src, prog: c.prog, secret: c.secret, typ: c.typ}, nil
	}
	cfg := scope.config(asBool)
	tree, err := checker.ParseCheck(src, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Optimize {
		if err := optimizer.Optimize(&tree.Node, cfg); err != nil {
			var fe *file.Error
			if errors.As(err, &fe) {
				return nil, fe.Bind(tree.Source)
			}
			return nil, err
		}
	}
	secret := readsSecrets(&tree.Node, scope.secretEnv)
	prog, err := compiler.Compile(tree, cfg)
	if err != nil {
		return nil, err
	}
	e := &Expr{Src: src, prog: prog, secret: secret, typ: tree.Node.Type()}
	if scope.compiled != nil {
		scope.compiled[exprKey{src, asBool}] = e
	}
	return e, nil
}

// Eval runs the expression. One that reads a secret is handed to the
// evaluation's secretEval when it has one (Runner.SecretEval).
func (e *Expr) Eval(env map[string]any) (any, error) {
	if err := e.load(); err != nil {
		return nil, err
	}
	if e.secret {
		if f, ok := env[secretEvalName].(secretEval); ok {
			return f(e, env)
		}
	}
	return e.run(env)
}

func (e *Expr) run(env map[string]any) (any, error) {
	v, err := expr.Run(e.prog, env)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.Src, err)
	}
	return v, nil
}

// Bool runs a boolean expression.
func (e *Expr) Bool(env map[string]any) (bool, error) {
	v, err := e.Eval(env)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%s: gave %T, want true or false", e.Src, v)
	}
	return b, nil
}

// exprError is a compile error at an offset of the template's text.
type exprError struct {
	offset int // byte offset in the scalar's value where the problem is
	msg    string
}

// compileTemplate splits src into literals and ${{ }} expressions and
// compiles each one.
func compileTemplate(src string, scope *Scope) (*Template, []exprError) {
	t := &Template{Src: src}
	var errs []exprError
	rest, base := src, 0
	for {
		i := strings.Index(rest, "${{")
		if i < 0 {
			if rest != "" {
				t.parts = append(t.parts, part{lit: rest, off: base})
			}
			return t, errs
		}
		if i > 0 {
			t.parts = append(t.parts, part{lit: rest[:i], off: base})
		}
		j := strings.Index(rest[i+3:], "}}")
		if j < 0 {
			errs = append(errs, exprError{base + i, "${{ is not closed with }}"})
			return t, errs
		}
		code := rest[i+3 : i+3+j]
		e, err := compileExpr(strings.TrimSpace(code), scope, false)
		if strings.TrimSpace(code) == "" {
			errs = append(errs, exprError{base + i, "empty ${{ }}"})
		} else if err != nil {
			lead := len(code) - len(strings.TrimLeft(code, " \t\n"))
			errs = append(errs, exprError{base + i + 3 + lead + exprErrorColumn(err), "in ${{ }}: " + exprMessage(err, scope)})
		} else {
			t.parts = append(t.parts, part{expr: e, off: base + i})
		}
		base += i + 3 + j + 2
		rest = rest[i+3+j+2:]
	}
}

var unknownNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^unknown (?:field|name) (\w+)$`) })

// exprMessage is the first line of an expr error, without its source echo,
// with a "did you mean" for a misspelt name.
func exprMessage(err error, scope *Scope) string {
	msg := err.Error()
	var fe *file.Error
	if errors.As(err, &fe) {
		msg = fe.Message
	}
	msg, _, _ = strings.Cut(msg, "\n")
	if m := unknownNameRE().FindStringSubmatch(msg); m != nil {
		msg += plans.Suggest(m[1], scopeNames(scope.types, nil))
	}
	return msg
}

// scopeNames lists every name at any depth of a scope, for suggestions.
func scopeNames(m types.Map, out []string) []string {
	for k, v := range m {
		out = append(out, k)
		if sub, ok := v.(types.Map); ok {
			out = scopeNames(sub, out)
		}
	}
	sort.Strings(out)
	return out
}

func exprErrorColumn(err error) int {
	var fe *file.Error
	if errors.As(err, &fe) && fe.Line <= 1 {
		return fe.Column
	}
	return 0
}

// Literal is the template's text when it holds no ${{ }}: what it
// renders to is known when the plan loads.
func (t *Template) Literal() (string, bool) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.expr != nil {
			return "", false
		}
		b.WriteString(p.lit)
	}
	return b.String(), true
}

// Render evaluates every part and joins them as text.
func (t *Template) Render(env map[string]any) (string, error) {
	return t.render(env)
}

func (t *Template) render(env map[string]any) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.expr == nil {
			b.WriteString(p.lit)
			continue
		}
		v, err := p.expr.Eval(env)
		if err != nil {
			return "", err
		}
		b.WriteString(Text(v))
	}
	return b.String(), nil
}

// Value is Render, except that a template that is one ${{ }} and nothing
// else gives the expression's value itself.
// valueType is the type Value gives: the expression's for one whole
// ${{ }}, text otherwise (nil: unknown).
func (t *Template) valueType() reflect.Type {
	if len(t.parts) == 1 && t.parts[0].expr != nil {
		if t.parts[0].expr.load() != nil {
			return nil
		}
		return t.parts[0].expr.typ
	}
	return reflect.TypeOf("")
}

func (t *Template) Value(env map[string]any) (any, error) {
	if len(t.parts) == 1 && t.parts[0].expr != nil {
		return t.parts[0].expr.Eval(env)
	}
	return t.Render(env)
}

// Text formats a value for insertion into text: strings as they are, nil as
// nothing, lists and mappings as JSON.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case fmt.Stringer:
		return x.String()
	}
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}

// ShellQuote quotes s as one POSIX shell word.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:=@%+,", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// scalarPos finds where byte offset off of a scalar's value stands in the
// file. Plain and quoted one-line scalars map exactly; for block scalars the
// line is exact and the column is found from the source text.
func scalarPos(src []byte, n *yaml.Node, off int) (line, col int) {
	v := n.Value
	if off > len(v) {
		off = len(v)
	}
	switch n.Style {
	case yaml.LiteralStyle, yaml.FoldedStyle:
		lineIdx := strings.Count(v[:off], "\n")
		lineStart := strings.LastIndex(v[:off], "\n") + 1
		line = n.Line + 1 + lineIdx
		col = 1 + off - lineStart
		if l := sourceLine(src, line); l != "" {
			lineEnd := strings.IndexByte(v[lineStart:], '\n')
			text := v[lineStart:]
			if lineEnd >= 0 {
				text = text[:lineEnd]
			}
			if k := strings.Index(l, text); k >= 0 {
				col = k + 1 + off - lineStart
			}
		}
		return line, col
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		if !strings.Contains(v[:off], "\n") {
			return n.Line, n.Column + 1 + off
		}
	default:
		if !strings.Contains(v[:off], "\n") {
			return n.Line, n.Column + off
		}
	}
	return n.Line, n.Column
}

func sourceLine(src []byte, line int) string {
	lines := strings.Split(string(src), "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	return lines[line-1]
}

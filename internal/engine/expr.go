package engine

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/checker/nature"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
	"github.com/planrunner/runner/internal/plans"
)

// Expr is a compiled expression.
type Expr struct {
	Src string
	// deferred is set on an expression whose program is not kept with
	// it: the scope's cache holds it while it is in use (progCache), and
	// it is compiled again if it was dropped. A plan compiled by
	// CompileChecked also has it type-checked on first use (load), under
	// once, so parallel steps may be the first together; a plan compiled
	// by Compile was checked at load.
	//
	// A plan holds an Expr for each expression of each step while it
	// compiles, and for those outside its steps' types to its end: what
	// few expressions need sits behind pointers (96 bytes, 160 when the
	// steps they name and the deferred compile's scope were held here).
	deferred *deferredExpr
	once     sync.Once
	// secret: it reads a secret (secrets.NAME, or a plan env value made
	// from one), so Runner.SecretEval decides it (see Eval).
	secret bool
	err    error       // the deferred compile's error
	prog   *vm.Program // nil when deferred
	// typ is the type the checker gave it (nil: unknown), for a call's
	// vars and a callee's outputs.
	typ reflect.Type
	// refs are the steps it names (see stepRefs), found on first need:
	// validate and a run's start never need them.
	refs atomic.Pointer[stepRefs]
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
	if r := e.refs.Load(); r != nil {
		return *r
	}
	// Found by two evaluations at once, they find the same.
	r := stepRefs{all: true}
	if prog, err := e.program(); err == nil && prog != nil {
		root := prog.Node()
		r = namedSteps(&root)
	}
	e.refs.Store(&r)
	return r
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

// deferredExpr is what compiling an expression later takes.
type deferredExpr struct {
	scope  *Scope
	asBool bool
}

// compiledMax bounds the expressions a scope remembers having checked
// (Scope.compiled): the same one written in many steps is within a few
// thousand of its last use, and a plan of 100k distinct expressions held
// a map of them all, 7 MB, while it compiled.
const compiledMax = 4096

// compileExpr compiles src against the scope; asBool requires a boolean.
// It is expr.Compile with the scope's configuration reused. In a scope of
// a plan already checked (Scope.deferred) it only notes what to compile.
func compileExpr(src string, scope *Scope, asBool bool) (*Expr, error) {
	if scope.deferred {
		return &Expr{Src: src, deferred: scope.deferredFor(asBool)}, nil
	}
	if scope.progs == nil {
		return compileNow(src, scope, asBool)
	}
	// Checked now, its program left to the scope's cache: a plan's
	// compiled expressions held to the end of its run were the largest
	// part of a 100k-step run's memory, and most are run once.
	key := exprKey{src, asBool}
	c, ok := scope.compiled[key]
	if !ok {
		full, err := compileNow(src, scope, asBool)
		if err != nil {
			return nil, err
		}
		c = checked{full.secret, full.typ}
		if scope.compiled != nil {
			if len(scope.compiled) >= compiledMax {
				scope.compiled = make(map[exprKey]checked)
			}
			scope.compiled[key] = c
		}
		scope.progs.seed(progKey{scope, key}, full.prog)
	}
	e := &Expr{Src: src, deferred: scope.deferredFor(asBool), secret: c.secret, typ: c.typ}
	e.once.Do(func() {}) // checked
	return e, nil
}

// load type-checks a deferred expression of a CompileChecked plan, once.
// A plan that was checked whole when its run started has no error here
// unless the expression language changed under it; then the step using
// it fails, saying so.
func (e *Expr) load() error {
	if e.deferred == nil {
		return nil
	}
	e.once.Do(func() {
		c, err := e.compile()
		if err != nil {
			e.err = fmt.Errorf("%s: %s", e.Src, exprMessage(e.Src, err, e.deferred.scope))
			return
		}
		e.secret, e.typ = c.secret, c.typ
	})
	return e.err
}

// program is the expression's compiled program: its own, or the one its
// scope's cache holds, compiled again when the cache has dropped it.
func (e *Expr) program() (*vm.Program, error) {
	if e.deferred == nil {
		return e.prog, nil
	}
	if err := e.load(); err != nil {
		return nil, err
	}
	d := e.deferred
	if p, ok := d.scope.progs.get(progKey{d.scope, exprKey{e.Src, d.asBool}}); ok {
		return p, nil
	}
	c, err := e.compile()
	if err != nil {
		return nil, fmt.Errorf("%s: %s", e.Src, exprMessage(e.Src, err, d.scope))
	}
	return c.prog, nil
}

// compile compiles a deferred expression and hands its program to the
// scope's cache.
func (e *Expr) compile() (*Expr, error) {
	d := e.deferred
	// The scope's configuration holds expr's type cache, which checking
	// fills: one compile at a time per scope.
	d.scope.mu.Lock()
	defer d.scope.mu.Unlock()
	c, err := compileNow(e.Src, d.scope, d.asBool)
	if err != nil {
		return nil, err
	}
	d.scope.progs.put(progKey{d.scope, exprKey{e.Src, d.asBool}}, c.prog)
	return c, nil
}

// checked is what compiling an expression tells beside its program.
type checked struct {
	secret bool
	typ    reflect.Type
}

func compileNow(src string, scope *Scope, asBool bool) (*Expr, error) {
	cfg := scope.config(asBool)
	// checker.ParseCheck, with the steps the expression names described
	// between the parse and the check.
	tree, err := parser.ParseWithConfig(src, cfg)
	if err != nil {
		return nil, err
	}
	cfg, locked := scope.configFor(asBool, cfg, tree)
	if locked {
		defer scope.namedMu.Unlock()
	}
	if _, err := new(checker.Checker).PatchAndCheck(tree, cfg); err != nil {
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
	return &Expr{Src: src, prog: prog, secret: secret, typ: tree.Node.Type()}, nil
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
	prog, err := e.program()
	if err != nil {
		return nil, err
	}
	v, err := expr.Run(prog, env)
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

var unknownNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^unknown (?:field|name) (\w+)$`) })

// exprMessage is the first line of an expr error, without its source echo,
// with a "did you mean" for a misspelt name.
func exprMessage(src string, err error, scope *Scope) string {
	msg := err.Error()
	var fe *file.Error
	if errors.As(err, &fe) {
		msg = fe.Message
	}
	msg, _, _ = strings.Cut(msg, "\n")
	switch {
	case msg == "unexpected token EOF" || msg == "unexpected end of expression":
		return endsTooSoon(src)
	case msg == "literal not terminated":
		return "the string is not closed"
	case strings.HasPrefix(msg, "unexpected token ") && fe != nil && fe.Line <= 1:
		// The token the parser stopped at, after a | that wanted a filter.
		if before := []rune(src); fe.Column <= len(before) && strings.HasSuffix(strings.TrimSpace(string(before[:fe.Column])), "|") {
			return fmt.Sprintf("expected a filter name after |, got %s", tokenText(string(before[fe.Column:])))
		}
	}
	if m := unknownNameRE().FindStringSubmatch(msg); m != nil {
		msg += plans.Suggest(m[1], scopeNames(scope.whole(), nil))
	}
	return msg
}

// scopeNames lists every name at any depth of a scope, for suggestions.
func scopeNames(nt nature.Nature, out []string) []string {
	if nt.TypeData == nil {
		return out
	}
	for k, v := range nt.Fields {
		out = append(out, k)
		out = scopeNames(v, out)
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

// endsTooSoon says what an expression that stops mid-way lacked, from
// what it ends with: `steps.a.output |` wants a filter name.
func endsTooSoon(src string) string {
	t := strings.TrimSpace(src)
	for _, op := range []string{"|", "."} {
		if strings.HasSuffix(t, op) && !strings.HasSuffix(t, op+op) {
			if op == "|" {
				return "expected a filter name after | (a function: steps.a.output | trim())"
			}
			return "expected a field name after ."
		}
	}
	for _, op := range []string{"??", "&&", "||", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "<", ">", "!", "?", ":", ",", " and", " or", " not", " in", " matches", " contains"} {
		if strings.HasSuffix(t, op) {
			return "expected a value after " + strings.TrimSpace(op)
		}
	}
	for _, p := range []struct{ open, close string }{{"(", ")"}, {"[", "]"}, {"{", "}"}} {
		if strings.Count(t, p.open) > strings.Count(t, p.close) {
			return "expected " + p.close + " to close the " + p.open
		}
	}
	if strings.Count(t, `"`)%2 == 1 || strings.Count(t, "'")%2 == 1 {
		return "the string is not closed"
	}
	return "the expression ends too soon (unexpected token EOF)"
}

// tokenText is the word src starts with, for a message.
func tokenText(src string) string {
	f := strings.Fields(src)
	if len(f) == 0 {
		return "nothing"
	}
	return f[0]
}

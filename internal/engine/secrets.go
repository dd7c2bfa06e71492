package engine

import (
	"fmt"
	"maps"
	"os"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/checker/nature"

	"github.com/expr-lang/expr/types"
	"github.com/planrunner/runner/internal/plans"
)

// secretsType is `secrets.<NAME>` in expressions: one string per name of
// plan.SecretNames (the plan's secrets and the providers' key variables).
func secretsType(p *plans.Plan) types.Map {
	m := types.Map{}
	for _, n := range p.SecretNames() {
		m[n] = types.String
	}
	return m
}

// compilePlanEnv compiles the plan's env values: they may hold ${{ }} over
// vars, secrets and run (a plan passes a secret on as
// `TOKEN: ${{ secrets.TOKEN }}`); steps do not exist yet when they are
// rendered.
func compilePlanEnv(r *plans.Reporter, p *plans.Plan, scope *Scope) []*Template {
	envScope := natureScope(mapNature(map[string]nature.Nature{"vars": scope.field("vars"), "secrets": scope.field("secrets"), "run": scope.field("run")}))
	out := make([]*Template, len(p.Env))
	for i, e := range p.Env {
		if strings.Contains(e.Value, "${{") {
			out[i] = compileTemplateAt(r, p.Source, e.Node, e.Value, envScope)
		}
	}
	return out
}

// secretValues reads the values of the plan's secret variables: from
// Runner.Secrets when set, else from runner's environment. A name that is
// not set reads as "", as in GitHub Actions.
func (r *Runner) secretValues() map[string]any {
	if r.Secrets != nil {
		return secretView(r.Prog.Plan, r.Secrets)
	}
	return secretView(r.Prog.Plan, EnvSecrets(r.Prog.Plan))
}

// EnvSecrets are the values this process's environment holds for the
// plan's secret variables (names it does not set are left out).
func EnvSecrets(p *plans.Plan) map[string]string {
	out := map[string]string{}
	for _, n := range p.SecretNames() {
		if v, ok := os.LookupEnv(n); ok {
			out[n] = v
		}
	}
	return out
}

// secretView is `secrets` in expressions: every name of the plan's, ""
// where values has none.
func secretView(p *plans.Plan, values map[string]string) map[string]any {
	out := map[string]any{}
	for _, n := range p.SecretNames() {
		out[n] = values[n]
	}
	return out
}

// secretEvalName holds an evaluation's secretEval in the expression
// environment (a name no expression can spell).
const secretEvalName = "\x00secretEval"

// secretEval decides an expression that reads a secret (Runner.SecretEval).
type secretEval func(e *Expr, env map[string]any) (any, error)

// secretEvalFor wraps Runner.SecretEval: the expression is run against
// the secret values it is given, and the plan env values made from them.
func (r *Runner) secretEvalFor() secretEval {
	return func(e *Expr, env map[string]any) (any, error) {
		return r.SecretEval(func(values map[string]string) (any, error) {
			own := maps.Clone(env)
			delete(own, secretEvalName)
			secrets := secretView(r.Prog.Plan, values)
			own["secrets"] = secrets
			view, err := r.planEnv(map[string]any{"vars": own["vars"], "secrets": secrets, "run": own["run"]})
			if err != nil {
				return nil, err
			}
			own["env"] = view
			return e.run(own)
		})
	}
}

// readsSecrets reports whether an expression reads a secret: it names
// secrets, or env.NAME for a plan env value made from one (or env as a
// whole, or $env, when there is such a value).
func readsSecrets(n *ast.Node, secretEnv map[string]bool) bool {
	f := &secretFinder{env: secretEnv, named: map[ast.Node]bool{}}
	ast.Walk(n, f)
	for _, id := range f.whole {
		if !f.named[id] && len(secretEnv) > 0 {
			return true
		}
	}
	return f.found
}

type secretFinder struct {
	env   map[string]bool
	found bool
	whole []ast.Node        // env and $env identifiers
	named map[ast.Node]bool // those read as env.NAME
}

func (f *secretFinder) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.MemberNode:
		if id, ok := x.Node.(*ast.IdentifierNode); ok && id.Value == "env" {
			if name, ok := x.Property.(*ast.StringNode); ok {
				f.named[id] = true
				f.found = f.found || f.env[name.Value]
			}
		}
	case *ast.IdentifierNode:
		switch x.Value {
		case "secrets":
			f.found = true
		case "env", "$env":
			f.whole = append(f.whole, x)
		}
	}
}

// secretEnvNames are the plan's env names whose value is made from a
// secret.
func secretEnvNames(p *plans.Plan, env []*Template) map[string]bool {
	out := map[string]bool{}
	for i, t := range env {
		if t == nil || i >= len(p.Env) {
			continue
		}
		for _, part := range t.parts {
			if part.expr != nil && part.expr.load() == nil && part.expr.secret {
				out[p.Env[i].Name] = true
			}
		}
	}
	return out
}

// stepEnv is the environment command and test steps start from: runner's
// own without the secret variables (API keys stay with runner: a model
// that writes `echo $OPENAI_API_KEY` into a command gets nothing), then the
// plan's env, rendered.
func (r *Runner) stepEnv(base map[string]any) ([]string, map[string]any, error) {
	secret := map[string]bool{}
	for _, n := range r.Prog.Plan.SecretNames() {
		secret[n] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !secret[name] {
			env = append(env, kv)
		}
	}
	view, err := r.planEnv(base)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range r.Prog.Plan.Env {
		env = append(env, e.Name+"="+view[e.Name].(string))
	}
	return env, view, nil
}

// planEnv is `env` in expressions: the plan's env values, rendered.
func (r *Runner) planEnv(base map[string]any) (map[string]any, error) {
	view := map[string]any{}
	for i, e := range r.Prog.Plan.Env {
		v := e.Value
		if i < len(r.Prog.env) && r.Prog.env[i] != nil {
			var err error
			if v, err = r.Prog.env[i].Render(base); err != nil {
				return nil, fmt.Errorf("env.%s: %w", e.Name, err)
			}
		}
		view[e.Name] = v
	}
	return view, nil
}

package engine

import (
	"fmt"
	"os"
	"strings"

	"github.com/expr-lang/expr/types"
	"github.com/planrunner/runner/plans"
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
	envScope := newScope(types.Map{"vars": scope.types["vars"], "secrets": scope.types["secrets"], "run": scope.types["run"]})
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
	out := map[string]any{}
	for _, n := range r.Prog.Plan.SecretNames() {
		v, ok := r.Secrets[n]
		if r.Secrets == nil {
			v, ok = os.LookupEnv(n)
		}
		if ok {
			out[n] = v
		} else {
			out[n] = ""
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
	view := map[string]any{}
	for i, e := range r.Prog.Plan.Env {
		v := e.Value
		if i < len(r.Prog.env) && r.Prog.env[i] != nil {
			var err error
			if v, err = r.Prog.env[i].Render(base); err != nil {
				return nil, nil, fmt.Errorf("env.%s: %w", e.Name, err)
			}
		}
		env = append(env, e.Name+"="+v)
		view[e.Name] = v
	}
	return env, view, nil
}

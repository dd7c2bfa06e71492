package temporal

import (
	"errors"
	"os"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/sys/mask"
	"go.temporal.io/sdk/workflow"
)

// secretMask masks the plan's secrets (its `secrets:`, the providers'
// keys, every agent's api_key_env) as this process's environment holds
// them. A worker masks what its steps hand back before it travels (the
// activity's result is in Temporal's history, the board's chunks in the
// store); the workflow masks its own board the same way, as runner masks
// a local run's board.
func secretMask(p *plans.Plan) *mask.Masker { return mask.New(secretValues(p)...) }

func secretValues(p *plans.Plan) []string {
	var out []string
	for _, n := range p.SecretNames() {
		out = append(out, os.Getenv(n))
	}
	return out
}

// masked is what a step attempt hands back, with the secrets masked.
func (o *StepOutput) masked(m *mask.Masker) {
	if m.Empty() {
		return
	}
	o.Result = board.RedactJSON(o.Result, m.String)
	o.Error, o.Goto = m.String(o.Error), m.String(o.Goto)
	if len(o.Inputs) > 0 {
		in := make(map[string]string, len(o.Inputs))
		for k, v := range o.Inputs {
			in[k] = m.String(v)
		}
		o.Inputs = in
	}
	if o.Write != nil {
		w := *o.Write
		w.Key, w.Section, w.Topic = m.String(w.Key), m.String(w.Section), m.String(w.Topic)
		w.Value = board.RedactValue(w.Value, m.String)
		o.Write = &w
	}
}

// secretsDecided is the workflow version from which an expression that
// reads a secret is decided once, in a side effect (decideSecrets).
// Histories of runs started before it replay as they were recorded.
const secretsDecided = "secrets-decided-in-side-effects"

// secretOutcome is what the history keeps of an expression that read a
// secret: its value masked (a boolean for an if or a when), or its error.
type secretOutcome struct {
	Value any    `json:",omitempty"`
	Err   string `json:",omitempty"`
}

// decideSecrets makes the workflow's expressions that read a secret (an
// if or when on secrets.X, a board value made from one) deterministic: the
// worker that first runs the workflow task evaluates each one with the
// secrets its environment holds, inside a side effect, and the history
// keeps the outcome with every secret masked, never the values. Any worker
// that replays the history, whatever its environment, takes the recorded
// outcome, so the same history takes the same branches. The workflow
// itself sees no secret (engine.Runner.Secrets is empty).
func decideSecrets(ctx workflow.Context, r *engine.Runner, p *plans.Plan) {
	r.Secrets = map[string]string{}
	r.SecretEval = func(eval func(map[string]string) (any, error)) (any, error) {
		var out secretOutcome
		err := workflow.SideEffect(ctx, func(workflow.Context) any {
			m := secretMask(p)
			v, err := eval(engine.EnvSecrets(p))
			if err != nil {
				return secretOutcome{Err: m.String(err.Error())}
			}
			return secretOutcome{Value: board.RedactValue(v, m.String)}
		}).Get(&out)
		switch {
		case err != nil:
			return nil, err
		case out.Err != "":
			return nil, errors.New(out.Err)
		}
		return out.Value, nil
	}
}

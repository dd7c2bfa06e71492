package temporal

import (
	"os"

	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/mask"
	"github.com/planrunner/runner/plans"
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
	if o.Write != nil {
		w := *o.Write
		w.Key, w.Section, w.Topic = m.String(w.Key), m.String(w.Section), m.String(w.Topic)
		w.Value = board.RedactValue(w.Value, m.String)
		o.Write = &w
	}
}

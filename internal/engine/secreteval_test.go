package engine_test

import (
	"context"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// With Runner.SecretEval, every expression that reads a secret (directly,
// or through a plan env value made from one) is decided by it, against the
// values it gives, and no other expression is: the Temporal workflow
// decides these once, in a side effect, whatever its worker's environment.
func TestSecretEvalDecidesExpressionsThatReadSecrets(t *testing.T) {
	prog, err := engine.Compile("plan.yaml", []byte(`version: 1
name: secrets
secrets: [TOKEN]
env: {AUTH: "Bearer ${{ secrets.TOKEN }}", PLAIN: x}
steps:
  - {label: a, type: echo, text: "yes", if: 'secrets.TOKEN == "abc"'}
  - {label: b, type: echo, text: '${{ env.AUTH }}', if: 'env.PLAIN == "x"'}
  - {label: c, type: echo, text: '${{ len(secrets.TOKEN) }} ${{ env.PLAIN }}'}
  - {label: d, type: echo, text: "never", if: 'secrets.TOKEN == ""'}
`), registry())
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	b := board.New(board.Run{ID: "s"})
	r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: t.TempDir(),
		Secrets: map[string]string{}, // what the process itself holds: nothing
		SecretEval: func(eval func(map[string]string) (any, error)) (any, error) {
			v, err := eval(map[string]string{"TOKEN": "abc"})
			asked = append(asked, engine.Text(v))
			return v, err
		}}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range b.Steps() {
		var out string
		if s.Status == "succeeded" {
			res, _ := engine.DecodeResult(prog.Node(s.Label), s.Result)
			out = engine.Text(res.Output)
		}
		got[s.Label] = s.Status + " " + out
	}
	want := map[string]string{"a": "succeeded yes", "b": "succeeded Bearer abc", "c": "succeeded 3 x", "d": "skipped "}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("step %s: %q, want %q", k, got[k], v)
		}
	}
	// a's if, b's text, c's len() and d's if; not b's if, nor c's env.PLAIN.
	if len(asked) != 4 || asked[0] != "true" || asked[1] != "Bearer abc" || asked[2] != "3" || asked[3] != "false" {
		t.Errorf("SecretEval decided %q", asked)
	}
}

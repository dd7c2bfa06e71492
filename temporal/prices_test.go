package temporal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/steps"
	"github.com/rs/zerolog"
)

// A worker reads the user's prices file as runner does
// (agents.UseUserPrices, which runner-temporal calls as it starts): a
// model priced only there runs under limits.max_cost_usd on Temporal, and
// without the file is refused naming the file to add it to.
func TestWorkerTakesUserPrices(t *testing.T) {
	const src = `
version: 1
name: priced
limits: {max_cost_usd: 1}
agents:
  coder: {provider: openai, model: house-coder-7b, max_tokens: 1000, base_url: "http://127.0.0.1:1/v1"}
steps:
  - {label: ask, type: llm, agent: coder, prompt: "hi"}
`
	t.Setenv("OPENAI_API_KEY", "sk-test")
	dir := t.TempDir()
	prices := filepath.Join(dir, "prices.yaml")
	if err := os.WriteFile(prices, []byte("models:\n  house-coder: {input: 0.2, output: 0.8}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agents.UsePricesFile("") })
	prog, err := engine.Compile("plan.yaml", []byte(src), steps.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, wantErr string
	}{
		{"priced in the user's file", prices, ""},
		{"no prices file", filepath.Join(dir, "none.yaml"), `needs the price of model "house-coder-7b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"RUNNER_PRICES": tc.file}
			if err := agents.UseUserPrices(func(k string) string { return env[k] }); err != nil {
				t.Fatal(err)
			}
			run := newRun(t, src, t.TempDir())
			a := &Activities{Log: zerolog.Nop()}
			r, _, _, err := a.newRunner(prog, run, StepInput{PlanPath: "plan.yaml", Workdir: run.Workdir, Label: "ask", Visit: 1})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr == "" && r.Agents == nil:
				t.Fatal("no agents")
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "none.yaml")):
				t.Fatalf("err = %v, want it to say %q and name the prices file", err, tc.wantErr)
			}
			if r != nil && r.Agents != nil {
				r.Agents.Close()
			}
		})
	}
}

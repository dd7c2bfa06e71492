package steps

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestSecretsReachStepsOnlyThroughEnv: command steps do not inherit the
// plan's secret variables nor the providers' keys; the plan's or the
// step's env passes one on with ${{ secrets.NAME }}.
func TestSecretsReachStepsOnlyThroughEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-openai-1234")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-1234")
	t.Setenv("MY_KEY", "sk-mine-1234")
	t.Setenv("DEPLOY_TOKEN", "tok-1234")
	t.Setenv("PLAIN", "plain-value")
	b, err := runPlan(t, t.TempDir(), `
version: 1
secrets: [DEPLOY_TOKEN]
env: {FROM_PLAN: "${{ secrets.DEPLOY_TOKEN }}", LITERAL: "x"}
agents:
  a: {provider: script, responses: [ok], api_key_env: MY_KEY}
steps:
  - label: env
    type: command
    env: {FROM_STEP: "${{ secrets.OPENAI_API_KEY }}"}
    run: echo "[$OPENAI_API_KEY][$ANTHROPIC_API_KEY][$MY_KEY][$DEPLOY_TOKEN][$FROM_PLAN][$FROM_STEP][$PLAIN][$LITERAL]"
`, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	res, _, _ := saved(t, b, "env")
	want := "[][][][][tok-1234][sk-openai-1234][plain-value][x]"
	if got := strings.TrimSpace(res["stdout"].(string)); got != want {
		t.Errorf("the step saw %s, want %s", got, want)
	}
}

package plans

import (
	"strings"
	"testing"
)

func TestSecretsField(t *testing.T) {
	p, err := Parse("plan.yaml", []byte("version: 1\nsecrets: [TOKEN, GH_PAT]\nagents:\n  a: {provider: openai, model: m, api_key_env: MY_KEY}\nsteps: [{label: a, type: command, run: x}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.SecretNames(), ","); got != "TOKEN,GH_PAT,OPENAI_API_KEY,ANTHROPIC_API_KEY,MY_KEY" {
		t.Errorf("SecretNames = %s", got)
	}
	for _, tc := range []struct{ src, want string }{
		{"secrets: [bad-name]", `plan.yaml:2:11: secrets: "bad-name" is not an environment variable name`},
		{"secrets: {a: 1}", "plan.yaml:2:10: secrets must be a list of strings"},
	} {
		_, err := Parse("plan.yaml", []byte("version: 1\n"+tc.src+"\nsteps: [{label: a, type: command, run: x}]\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.src, err, tc.want)
		}
	}
}

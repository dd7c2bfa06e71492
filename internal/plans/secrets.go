package plans

import "gopkg.in/yaml.v3"

// ProviderKeyEnvs are the environment variables the model providers read
// their API keys from when an agent does not name another (api_key_env).
var ProviderKeyEnvs = []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"}

// SecretNames are the environment variables whose values are secret in a
// run of p: the plan's `secrets`, the providers' default key variables and
// every agent's api_key_env. Their values are masked in everything runner
// writes, and command and test steps get them only through an `env` entry
// (`NAME: ${{ secrets.NAME }}`).
func (p *Plan) SecretNames() []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, n := range p.Secrets {
		add(n)
	}
	for _, n := range ProviderKeyEnvs {
		add(n)
	}
	for _, a := range p.Agents {
		add(a.APIKeyEnv)
	}
	return out
}

// parseSecrets reads `secrets: [NAME, ...]`: names of runner's environment
// variables.
func parseSecrets(r *Reporter, n *yaml.Node) []string {
	var out []string
	list := Resolve(n)
	for i, name := range StringList(r, n, "secrets") {
		at := n
		if list != nil && list.Kind == yaml.SequenceNode && i < len(list.Content) {
			at = list.Content[i]
		}
		if !ValidIdent(name) {
			r.At(at, "secrets: %q is not an environment variable name (letters, digits and _)", name)
			continue
		}
		out = append(out, name)
	}
	return out
}

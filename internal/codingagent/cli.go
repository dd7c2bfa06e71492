package codingagent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CLIs are the coding-agent CLIs the step knows, by the name a plan gives.
var CLIs = []string{"claude", "codex"}

// Launch is how to start a CLI on one prompt, headless, against the proxy.
type Launch struct {
	CLI      string // claude or codex
	Bin      string // the executable (found on PATH by the caller)
	Prompt   string
	Home     string // a private HOME for the CLI's config and state, inside the run's temporary space
	ProxyURL string
	Token    string // the key the CLI sends the proxy
	Model    string // "" : the CLI's default
	Args     []string
	Env      []string // the step's environment, which the CLI's own settings replace
}

// keyEnv is the variable Codex reads its key from (the custom provider's
// env_key).
const keyEnv = "RUNNER_CODEX_KEY"

// ownEnv are the variables that would point a CLI at another API, key or
// home than the ones the step gives it: they are dropped from the
// environment the CLI inherits.
var ownEnv = []string{"HOME=", "XDG_CONFIG_HOME=", "XDG_DATA_HOME=", "XDG_STATE_HOME=", "XDG_CACHE_HOME=",
	"ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "AWS_BEARER_TOKEN_BEDROCK=", keyEnv + "="}

// MakeHome creates the directories of the private home the CLI is given
// (Codex refuses a CODEX_HOME that does not exist).
func (l Launch) MakeHome() error {
	for _, d := range []string{".config", ".cache", ".claude", ".codex", filepath.Join(".local", "share"), filepath.Join(".local", "state")} {
		if err := os.MkdirAll(filepath.Join(l.Home, d), 0o700); err != nil {
			return err
		}
	}
	return nil
}

// Command is the CLI's argv and environment.
func (l Launch) Command() ([]string, []string, error) {
	var env []string
	for _, e := range l.Env {
		drop := false
		for _, p := range ownEnv {
			if strings.HasPrefix(e, p) {
				drop = true
				break
			}
		}
		if !drop {
			env = append(env, e)
		}
	}
	env = append(env, "HOME="+l.Home, "XDG_CONFIG_HOME="+filepath.Join(l.Home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(l.Home, ".local", "share"), "XDG_STATE_HOME="+filepath.Join(l.Home, ".local", "state"),
		"XDG_CACHE_HOME="+filepath.Join(l.Home, ".cache"))
	switch l.CLI {
	case "claude":
		args := []string{l.Bin, "-p", l.Prompt, "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits"}
		if l.Model != "" {
			args = append(args, "--model", l.Model)
		}
		args = append(args, l.Args...)
		env = append(env, "CLAUDE_CONFIG_DIR="+filepath.Join(l.Home, ".claude"),
			"ANTHROPIC_BASE_URL="+l.ProxyURL, "ANTHROPIC_API_KEY="+l.Token,
			// Then it talks to the base URL only.
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
			"DISABLE_ERROR_REPORTING=1", "DISABLE_BUG_COMMAND=1")
		return args, env, nil
	case "codex":
		// The built-in provider ignores a base URL: a provider of our own
		// points it at the proxy.
		provider := fmt.Sprintf(`model_providers.runner={name="runner", base_url=%q, env_key=%q, wire_api="responses"}`, l.ProxyURL, keyEnv)
		args := []string{l.Bin, "exec", "--json", "--skip-git-repo-check", "--sandbox", "danger-full-access",
			"-c", provider, "-c", "model_provider=runner", "-c", "analytics.enabled=false",
			"-c", "check_for_update_on_startup=false", "-c", `approval_policy="never"`}
		if l.Model != "" {
			args = append(args, "-m", l.Model)
		}
		args = append(args, l.Args...)
		args = append(args, "--", l.Prompt)
		env = append(env, "CODEX_HOME="+filepath.Join(l.Home, ".codex"), keyEnv+"="+l.Token)
		return args, env, nil
	}
	return nil, nil, fmt.Errorf("unknown coding-agent CLI %q (one of %s)", l.CLI, strings.Join(CLIs, ", "))
}

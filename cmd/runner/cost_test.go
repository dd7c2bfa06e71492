package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A cost reads the same on every surface that shows it: the end of a
// run, the GitHub step summary, the HTML report, runner runs (which serve
// shares) and runner eval; and one that is not zero never reads as zeros.
func TestCostWrittenOneWayEverywhere(t *testing.T) {
	for _, tc := range []struct {
		usd  float64
		want string
	}{
		{0, "$0.00"},
		{0.000023, "$0.000023"},
		{0.004, "$0.0040"},
		{1.5, "$1.50"},
		{1234.5, "$1234.50"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			// The script agent answers in one output token at this price
			// per million: the call costs tc.usd.
			plan := fmt.Sprintf("version: 1\nname: cost\nagents:\n  bot: {provider: script, model: m, price: {input: 0, output: %g}, responses: [\"ok\"]}\nsteps:\n  - {label: ask, type: llm, agent: bot, prompt: hi}\n", tc.usd*1e6)
			wd := t.TempDir()
			os.WriteFile(filepath.Join(wd, "plan.yaml"), []byte(plan), 0o644)
			r := runCLI(t, wd, "run", "plan.yaml", "--log-format", "console")
			if r.code != 0 {
				t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
			}
			bb := blackboardPath(t, r.stdout)
			surfaces := map[string]string{}
			for _, l := range strings.Split(r.stderr, "\n") {
				switch {
				case strings.HasPrefix(l, "tokens: "):
					surfaces["the run's token line"] = l
				case strings.HasPrefix(l, "  agent bot: "):
					surfaces["the run's agent line"] = l
				}
			}
			surfaces["runner runs"] = runCLI(t, wd, "runs").stdout
			surfaces["runner eval"] = runCLI(t, wd, "eval", bb).stdout
			work, ar := actionsRun(t, plan)
			if ar.code != 0 {
				t.Fatalf("run on Actions: exit %d\n%s", ar.code, ar.stderr)
			}
			summary, _ := os.ReadFile(filepath.Join(work, "summary.md"))
			surfaces["the GitHub step summary"] = string(summary)
			html, _ := filepath.Glob(filepath.Join(work, ".runner", "runs", "*", "report.html"))
			if len(html) != 1 {
				t.Fatalf("report.html: %v", html)
			}
			page, _ := os.ReadFile(html[0])
			surfaces["the HTML report"] = string(page)
			for _, name := range []string{"the run's token line", "the run's agent line", "runner runs", "runner eval", "the GitHub step summary", "the HTML report"} {
				got, ok := surfaces[name]
				if !ok {
					t.Errorf("%s: not shown", name)
					continue
				}
				if !strings.Contains(got, tc.want) {
					if len(got) > 400 {
						got = got[:400] + "..."
					}
					t.Errorf("%s does not say %s:\n%s", name, tc.want, got)
				}
			}
		})
	}
}

// The token line and the agent line price the same calls alike: a script
// agent costs nothing whatever its model: name, a provider costs its
// model's price; runner runs sums the same recorded costs.
func TestTokenLineAgreesWithAgentLine(t *testing.T) {
	srv, _, _ := fakeOpenAI(t)
	example, _ := filepath.Abs("../../examples/fix-tests/plan.yaml")
	for _, tc := range []struct {
		name string
		args func(dir string) []string
		env  []string
		want string
	}{
		{"script agent (fix-tests)", func(string) []string { return []string{"run", example} }, nil, "$0.00"},
		{"openai provider", func(dir string) []string {
			return []string{"run", openaiPlan(t, dir, srv.URL), "--agent", "coder.model=gpt-4o-mini"}
		}, []string{"OPENAI_API_KEY=sk-test"}, "$0.000010"}, // 20 in, 10 out at $0.15 and $0.60 a million
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := append(os.Environ(), tc.env...)
			r := runEnv(t, dir, env, append(tc.args(dir), "--log-format", "console")...)
			if r.code != 0 {
				t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
			}
			cost := regexp.MustCompile(`\$[0-9.]+`)
			var token, agent string
			for _, l := range strings.Split(r.stderr, "\n") {
				switch {
				case strings.HasPrefix(l, "tokens: "):
					token = cost.FindString(l)
				case strings.HasPrefix(l, "  agent coder: "):
					agent = cost.FindString(l)
				}
			}
			if token != tc.want || agent != tc.want {
				t.Errorf("token line says %q, agent line %q; want both %s\n%s", token, agent, tc.want, r.stderr)
			}
			if runs := runEnv(t, dir, env, "runs").stdout; !strings.Contains(runs, tc.want) {
				t.Errorf("runner runs does not say %s:\n%s", tc.want, runs)
			}
		})
	}
}

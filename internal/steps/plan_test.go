package steps

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/engine"
)

// Every mistake in a call or in the plan it calls is reported when the
// caller loads, all at once, each at its line:col in the right file.
func TestCallProblemsAreReportedInTheRightFile(t *testing.T) {
	callee := `version: 1
vars: {name: x, count: 1, flag: true, items: [a]}
agents:
  helper: {provider: script, responses: [hi]}
outputs:
  out: steps.inner.output
steps:
  - {label: inner, type: command, run: "echo ${{ vars.name }}"}
`
	cases := []struct {
		name, caller string
		files        map[string]string
		want         []string
	}{
		{"unknown var", `{label: c, type: plan, plan: sub.yaml, vars: {nmae: y}}`, nil,
			[]string{`caller.yaml:4:51: vars: sub.yaml has no var "nmae" (its vars: name, count, flag, items) (did you mean "name"?)`}},
		{"literal of the wrong type", `{label: c, type: plan, plan: sub.yaml, vars: {count: "many"}}`, nil,
			[]string{`caller.yaml:4:58: vars.count: "many" is text, but var count of sub.yaml is a number (its default is 1)`}},
		{"expression of the wrong type", `{label: c, type: plan, plan: sub.yaml, vars: {flag: "${{ 1 + 2 }}"}}`, nil,
			[]string{`caller.yaml:4:57: vars.flag: ${{ 1 + 2 }} gives a number, but var flag of sub.yaml is a boolean`}},
		{"an int for a list", `{label: c, type: plan, plan: sub.yaml, vars: {items: 3}}`, nil,
			[]string{`vars.items: 3 is a number, but var items of sub.yaml is a list`}},
		{"bad expression in a var", `{label: c, type: plan, plan: sub.yaml, vars: {name: "${{ steps.nope.output }}"}}`, nil,
			[]string{`caller.yaml:4:68: in ${{ }}: unknown field nope`}},
		{"missing file", `{label: c, type: plan, plan: gone.yaml}`, nil,
			[]string{`caller.yaml:4:34: plan gone.yaml: open`, `no such file or directory (the path is relative to`}},
		{"missing plan field", `{label: c, type: plan}`, nil,
			[]string{`caller.yaml:4:5: step "c" (type plan) is missing required field "plan"`}},
		{"calls itself", `{label: c, type: plan, plan: caller.yaml}`, nil,
			[]string{`caller.yaml:4:34: plan caller.yaml: calls form a cycle: caller.yaml → caller.yaml`}},
		{"cycle through another file", `{label: c, type: plan, plan: loop.yaml}`,
			map[string]string{"loop.yaml": "version: 1\nsteps:\n  - {label: back, type: plan, plan: caller.yaml}\n"},
			[]string{`loop.yaml:3:37: plan caller.yaml: calls form a cycle: caller.yaml → loop.yaml → caller.yaml`,
				`caller.yaml:4:34: plan loop.yaml has 1 problem(s), listed under`}},
		{"unknown agent of the callee", `{label: c, type: plan, plan: sub.yaml, agents: {helpr: me}}`, nil,
			[]string{`caller.yaml:4:53: agents: sub.yaml has no agent "helpr" (its agents: helper) (did you mean "helper"?)`}},
		{"unknown agent of the caller", `{label: c, type: plan, plan: sub.yaml, agents: {helper: you}}`, nil,
			[]string{`caller.yaml:4:61: agents.helper: no agent named "you" in this plan's agents`}},
		{"unknown output", `{label: c, type: plan, plan: sub.yaml}
  - {label: d, type: command, run: "echo ${{ steps.c.outputs.ot }}"}`, nil,
			[]string{`caller.yaml:5:62: in ${{ }}: unknown field ot`}},
		{"problems inside the callee", `{label: c, type: plan, plan: bad.yaml}`,
			map[string]string{"bad.yaml": "version: 1\nenv: {A: b}\noutputs: {o: steps.x.outptu}\nsteps:\n  - {label: x, type: comand, run: echo}\n"},
			[]string{`bad.yaml:2:1: env: a called plan runs under its caller's env`,
				`bad.yaml:3:22: outputs.o: unknown field outptu`,
				`bad.yaml:5:22: unknown step type "comand"`,
				`caller.yaml:4:34: plan bad.yaml has 3 problem(s), listed under`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "sub.yaml"), []byte(callee), 0o644)
			for name, src := range c.files {
				os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644)
			}
			src := "version: 1\nagents: {me: {provider: script, responses: [hi]}}\nsteps:\n  - " + c.caller + "\n"
			path := filepath.Join(dir, "caller.yaml")
			os.WriteFile(path, []byte(src), 0o644)
			_, err := engine.Load(path, Registry())
			if err == nil {
				t.Fatal("loaded")
			}
			got := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
		})
	}
}

// A good call loads: vars of the right types (an int for a float, an
// expression of unknown type), outputs typed for the caller.
func TestCallLoads(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "sub.yaml"), []byte("version: 1\nvars: {name: x, ratio: 0.5}\noutputs: {n: len(vars.name), s: steps.a.output}\nsteps:\n  - {label: a, type: command, run: echo}\n"), 0o644)
	src := "version: 1\nvars: {v: [1]}\nsteps:\n  - {label: c, type: plan, plan: sub.yaml, vars: {ratio: 2, name: '${{ vars.v[0] }}'}}\n  - {label: d, type: command, run: 'echo ${{ steps.c.outputs.n + 1 }}'}\n"
	path := filepath.Join(dir, "caller.yaml")
	os.WriteFile(path, []byte(src), 0o644)
	if _, err := engine.Load(path, Registry()); err != nil {
		t.Fatal(err)
	}
}

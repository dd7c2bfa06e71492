package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// Calls of one callee for many items at once (run under -race): each
// call's steps see its own vars and its own steps (a frame per call
// label), the outputs come back in input order, a nested call works, and
// goto among the callee's steps stays in the call.
func TestSubPlanCallsRunInTheirOwnFrames(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("leaf.yaml", "version: 1\nvars: {word: none}\noutputs: {said: steps.say.output}\nsteps:\n  - {label: say, type: echo, text: \"leaf ${{ vars.word }}\"}\n")
	write("mid.yaml", `version: 1
vars: {name: x, n: 0}
outputs:
  text: steps.second.output
  leaf: steps.deeper.outputs.said
  n: vars.n
steps:
  - {label: first, type: echo, text: "first ${{ vars.name }}", sleep: 1ms}
  - {label: skip, type: jump, to: second, when: "true"}
  - {label: never, type: echo, text: "never"}
  - {label: second, type: echo, text: "${{ steps.first.output }} then ${{ vars.n }}"}
  - {label: deeper, type: plan, plan: leaf.yaml, vars: {word: "${{ vars.name }}"}}
`)
	path := write("top.yaml", `version: 1
steps:
  - label: each
    type: plan
    plan: mid.yaml
    for_each: 1..30
    max_concurrency: 8
    vars: {name: "i${{ item }}", n: "${{ index }}"}
  - {label: last, type: echo, text: "${{ steps.each.outputs[29].text }}|${{ steps.each.outputs[0].leaf }}|${{ steps.each.counts.succeeded }}"}
`)
	reg := registry()
	reg.Register(engine.PlanType{})
	prog, err := engine.Load(path, reg)
	if err != nil {
		t.Fatal(err)
	}
	b := board.New(board.Run{ID: "test"})
	r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: dir}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, last := lastResult(t, b, "last")
	if got := last["output"]; got != "first i30 then 29|leaf i1|30" {
		t.Errorf("last: %v", got)
	}
	for _, s := range b.Steps() {
		if strings.HasSuffix(s.Label, "/never") {
			t.Errorf("%s ran: the goto in the callee was not followed", s.Label)
		}
		if s.Label == "each[4]/deeper/say" && (s.Parent != "each[4]/deeper" || !strings.Contains(string(s.Result), "leaf i5")) {
			t.Errorf("nested callee step: parent %q result %s", s.Parent, s.Result)
		}
	}
}

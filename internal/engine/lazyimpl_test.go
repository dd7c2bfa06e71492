package engine_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// countType is echo, counting its Decode calls per label.
type countType struct {
	mu *sync.Mutex
	n  map[string]int
}

func (countType) Name() string { return "count" }
func (countType) Result() any  { return EchoResult{} }
func (c countType) Decode(d *engine.Decoder) engine.Step {
	c.mu.Lock()
	c.n[d.Label()]++
	c.mu.Unlock()
	return echoType{}.Decode(d)
}

func (c countType) decoded() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// CompileChecked (a resumed run's unchanged plan) leaves each step to be
// decoded by its type when it first runs, once however many visits or
// items run it at the same time; a step that never runs is never
// decoded. Compile (validate, a run's start) decodes every step at once.
// Decoding them all would cost a resume of a 100k-step run a fifth of
// its CPU, for steps that had run already.
func TestCompileCheckedDecodesStepsWhenTheyRun(t *testing.T) {
	const src = `version: 1
vars: {n: 2}
steps:
  - {label: a, type: count, text: "a ${{ vars.n }}"}
  - {label: never, type: count, text: "x", if: "vars.n > 5"}
  - label: g
    parallel:
      - {label: p1, type: count, text: "p1"}
      - {label: p2, type: count, text: "p2 ${{ steps.a.output }}"}
  - {label: e, type: count, for_each: "1..16", max_concurrency: 16, text: "${{ item * vars.n }}"}
  - {label: last, type: count, text: "${{ steps.a.output }} done"}
`
	newReg := func() (*engine.Registry, countType) {
		c := countType{mu: new(sync.Mutex), n: map[string]int{}}
		r := engine.NewRegistry()
		r.Register(c)
		return r, c
	}
	reg, c := newReg()
	if _, err := engine.Compile("plan.yaml", []byte(src), reg); err != nil {
		t.Fatal(err)
	}
	if got := c.decoded(); len(got) != 6 {
		t.Fatalf("Compile decoded %v; want all six steps", got)
	}

	reg, c = newReg()
	prog, err := engine.CompileChecked("plan.yaml", []byte(src), reg)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.decoded(); len(got) != 0 {
		t.Fatalf("CompileChecked decoded %v before any step ran", got)
	}
	b := board.New(board.Run{ID: "test"})
	if err := (&engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop()}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := c.decoded()
	for _, l := range []string{"a", "p1", "p2", "e", "last"} {
		if got[l] != 1 {
			t.Errorf("step %s decoded %d times; want once", l, got[l])
		}
	}
	if got["never"] != 0 {
		t.Errorf("a step that never ran was decoded")
	}
	if rec, res := lastResult(t, b, "last"); rec.Status != "succeeded" || res["text"] != "a 2 done" {
		t.Errorf("last: %s %v", rec.Status, res)
	}
	if _, res := lastResult(t, b, "p2"); res["text"] != "p2 a 2" {
		t.Errorf("p2: %v", res)
	}
	// The dry run of such a program still describes every step.
	var dry bytes.Buffer
	engine.DryRun(&dry, prog, nil)
	if !strings.Contains(dry.String(), "never") {
		t.Errorf("dry run: %s", dry.String())
	}
}

package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// for_each on a parallel group or a sequence runs the whole block once per
// item, with item and index in scope for every step inside it; each
// item's steps read their own siblings (steps.X in an item is that item's
// X), their records are labelled ITEM/LABEL, and the block's results keep
// the input order.
func TestForEachOnBlock(t *testing.T) {
	cases := []struct {
		name, block string
		want        string   // after's output
		labels      []string // records of item 1, by label
	}{
		{"group", `
      - label: fan
        for_each: '["a", "b", "c"]'
        max_concurrency: 2
        parallel:
          - {label: up, type: echo, sleep: 1ms, text: "${{ upper(item) }}"}
          - {label: at, type: echo, text: "${{ index }}"}
`, "A0 B1 C2|3", []string{"fan[1]", "fan[1]/at", "fan[1]/up"}},
		{"sequence", `
      - label: fan
        for_each: '["a", "b", "c"]'
        steps:
          - {label: read, type: echo, sleep: 1ms, text: "${{ item }}${{ index }}"}
          - {label: sum, type: echo, text: "${{ upper(steps.read.output) }}"}
`, "A0 B1 C2|3", []string{"fan[1]", "fan[1]/read", "fan[1]/sum"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			after := `${{ join(map(steps.fan.outputs, {(#.up ?? "") + (#.at ?? "") + (#.sum ?? "")}), " ") }}|${{ steps.fan.counts.succeeded }}`
			src := "version: 1\nsteps:\n  - label: outer\n    parallel:\n" + tc.block +
				"      - {label: other, type: echo, text: x}\n" +
				"  - {label: after, type: echo, text: '" + after + "'}\n"
			if tc.name == "group" {
				src = "version: 1\nsteps:\n" + strings.ReplaceAll(tc.block, "\n      ", "\n  ") +
					"  - {label: after, type: echo, text: '" + after + "'}\n"
			}
			b, err := runPlan(t, src)
			if err != nil {
				t.Fatal(err)
			}
			rec, res := lastResult(t, b, "after")
			if res["output"] != tc.want {
				t.Errorf("after: %q, want %q (%s)", res["output"], tc.want, rec.Error)
			}
			var labels []string
			for _, s := range b.Steps() {
				if strings.HasPrefix(s.Label, "fan[1]") {
					labels = append(labels, s.Label)
					if s.Visit != 1 {
						t.Errorf("%s#%d, want visit 1", s.Label, s.Visit)
					}
				}
			}
			sort.Strings(labels)
			if fmt.Sprint(labels) != fmt.Sprint(tc.labels) {
				t.Errorf("item 1's records %v, want %v", labels, tc.labels)
			}
		})
	}
}

// Every label a run records is found again in the plan, with the label of
// the visit that holds it: items, a for_each block's steps, steps nested
// in a block item, a for_each inside an item, a call inside an item.
func TestForEachBlockLabels(t *testing.T) {
	src := `
version: 1
steps:
  - label: top
    parallel:
      - label: fan
        for_each: '[1, 2]'
        steps:
          - {label: read, type: echo, text: x}
          - label: inner
            parallel:
              - {label: deep, type: echo, text: y}
              - {label: each, type: echo, for_each: '[1]', text: z}
  - label: g
    for_each: '[1]'
    parallel:
      - {label: a, type: echo, text: "${{ item }}"}
`
	prog, err := engine.Compile("plan.yaml", []byte(src), registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ label, parent string }{
		{"top", ""},
		{"fan", "top"},
		{"fan[1]", "fan"},
		{"fan[1]/read", "fan[1]"},
		{"fan[1]/inner", "fan[1]"},
		{"fan[1]/deep", "fan[1]/inner"},
		{"fan[1]/each", "fan[1]/inner"},
		{"fan[1]/each[0]", "fan[1]/each"},
		{"g[0]", "g"},
		{"g[0]/a", "g[0]"},
		{"g[0]/nope", ""},
		{"nope[0]", ""},
	} {
		if got := prog.ParentLabel(tc.label); got != tc.parent {
			t.Errorf("ParentLabel(%s) = %q, want %q", tc.label, got, tc.parent)
		}
		if n := prog.Node(tc.label); (n == nil) != strings.Contains(tc.label, "nope") {
			t.Errorf("Node(%s) = %v", tc.label, n)
		} else if n != nil && n.Label != tc.label {
			t.Errorf("Node(%s).Label = %s", tc.label, n.Label)
		}
	}
}

// A for_each block that failed in one item is resumed: the items and the
// steps of items that completed are not run again, the failed item runs
// again from its failed step, and the block's results hold every item in
// input order.
func TestForEachBlockResumes(t *testing.T) {
	src := `
version: 1
vars:
  fail: true
steps:
  - label: group
    parallel:
      - label: fan
        for_each: '["a", "b", "c"]'
        max_concurrency: 1
        fail_fast: false
        steps:
          - {label: read, type: echo, text: "${{ item }}"}
          - {label: use, type: echo, text: "${{ vars.fail && item == 'b' ? 'boom' : upper(steps.read.output) }}"}
  - {label: after, type: echo, text: "${{ join(map(steps.fan.outputs, {#.use}), ',') }}"}
`
	prog, err := engine.Compile("plan.yaml", []byte(src), registry())
	if err != nil {
		t.Fatal(err)
	}
	b := board.New(board.Run{ID: "test"})
	err = (&engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop()}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "fan[1]/use: boom") {
		t.Fatalf("the first run: %v", err)
	}
	r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Vars: map[string]any{"fail": false}}
	if err := r.Restore(); err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, s := range b.Steps() {
		if s.Status == "succeeded" {
			count[s.Label]++
		}
	}
	for _, l := range []string{"fan[0]", "fan[0]/read", "fan[0]/use", "fan[1]", "fan[1]/read", "fan[1]/use", "fan[2]", "fan[2]/read", "fan[2]/use", "fan", "after"} {
		if count[l] != 1 {
			t.Errorf("%s succeeded %d times, want once (%v)", l, count[l], count)
		}
	}
	if _, res := lastResult(t, b, "after"); res["output"] != "A,B,C" {
		t.Errorf("after: %q", res["output"])
	}
}

// limits.max_steps counts, before any item starts, each item with the
// steps it runs: a for_each step's items, a for_each block's items and
// their steps, a for_each of calls and their callee's steps. The run
// fails with the limit saying so and no item runs; a list that fits runs.
func TestForEachMaxStepsCountsItemsSteps(t *testing.T) {
	dir := t.TempDir()
	callee := "version: 1\nsteps:\n  - {label: a, type: echo, text: x}\n  - {label: b, type: echo, text: y}\n"
	if err := os.WriteFile(filepath.Join(dir, "callee.yaml"), []byte(callee), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, step, want string
		fits             int // the largest list that runs
	}{
		{"step", "{label: each, type: echo, for_each: 'LIST', text: x}",
			"for_each gives 10000 items, which would pass limits.max_steps 100 (each item is a step; raise the limit)", 99},
		{"group", "{label: each, for_each: 'LIST', parallel: [{label: a, type: echo, text: x}, {label: b, type: echo, text: y}]}",
			"for_each gives 10000 items, which would pass limits.max_steps 100 (each item is 3 steps: the item and the 2 steps it runs, 30000 in all; raise the limit)", 33},
		{"sequence", "{label: g, parallel: [{label: each, for_each: 'LIST', steps: [{label: a, type: echo, text: x}, {label: b, type: echo, text: y}]}]}",
			"for_each gives 10000 items, which would pass limits.max_steps 100 (each item is 3 steps: the item and the 2 steps it runs, 30000 in all; raise the limit)", 33},
		{"call", "{label: each, type: plan, plan: callee.yaml, for_each: 'LIST'}",
			"for_each gives 10000 items, which would pass limits.max_steps 100 (each item is 3 steps: the item and the 2 steps it runs, 30000 in all; raise the limit)", 33},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(n int) (*board.Board, error) {
				limit := 100
				if tc.name == "sequence" {
					limit = 101 // the group around it
				}
				src := fmt.Sprintf("version: 1\nlimits: {max_steps: %d}\nsteps:\n  - %s\n", limit, strings.ReplaceAll(tc.step, "LIST", fmt.Sprintf("1..%d", n)))
				path := filepath.Join(dir, "plan.yaml")
				if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
				reg := registry()
				reg.Register(engine.PlanType{})
				prog, err := engine.Load(path, reg)
				if err != nil {
					t.Fatal(err)
				}
				b := board.New(board.Run{ID: "test"})
				return b, (&engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop()}).Run(context.Background())
			}
			b, err := run(10000)
			want := strings.ReplaceAll(tc.want, "max_steps 100", "max_steps 100")
			if tc.name == "sequence" {
				want = strings.ReplaceAll(want, "max_steps 100", "max_steps 101")
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("run: %v\nwant %s", err, want)
			}
			for _, s := range b.Steps() {
				if strings.Contains(s.Label, "[") {
					t.Fatalf("item %s ran", s.Label)
				}
			}
			if _, err := run(tc.fits); err != nil {
				t.Errorf("%d items: %v", tc.fits, err)
			}
			if _, err := run(tc.fits + 1); err == nil {
				t.Errorf("%d items ran", tc.fits+1)
			}
		})
	}
}

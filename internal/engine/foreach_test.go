package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"github.com/rs/zerolog"
)

// runPlan compiles src with the fake types and runs it on a new board.
func runPlan(t *testing.T, src string) (*board.Board, error) {
	t.Helper()
	prog, err := engine.Compile("plan.yaml", []byte(src), registry())
	if err != nil {
		t.Fatal(err)
	}
	b := board.New(board.Run{ID: "test"})
	r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop()}
	return b, r.Run(context.Background())
}

// lastResult is the result saved by the last record of label.
func lastResult(t *testing.T, b *board.Board, label string) (board.StepRecord, map[string]any) {
	t.Helper()
	var rec board.StepRecord
	for _, s := range b.Steps() {
		if s.Label == label {
			rec = s
		}
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Result, &m); err != nil {
		t.Fatalf("%s: %v (%s)", label, err, rec.Result)
	}
	return rec, m
}

// Each item runs as its own visit, with item and index in scope, at most
// max_concurrency at once; the step's results and outputs keep the input
// order whatever order the items finished in, and a later step reads them.
func TestForEachRunsItemsInInputOrder(t *testing.T) {
	cases := []struct {
		name, list, want string
		vars             string
	}{
		{"literal", `["a", "b", "c"]`, "0:a 1:b 2:c", ""},
		{"a var", `vars.names`, "0:x 1:y", "vars:\n  names: [x, y]\n"},
		{"split", `split("p,q,r", ",")`, "0:p 1:q 2:r", ""},
		{"numbers", `1..3`, "0:1 1:2 2:3", ""},
		{"a previous step's JSON", `fromJSON(steps.list.output)`, "0:j 1:k", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := fmt.Sprintf(`
version: 1
%ssteps:
  - {label: list, type: echo, text: '["j","k"]'}
  - label: each
    type: echo
    for_each: '%s'
    max_concurrency: 2
    sleep: 1ms
    text: "${{ index }}:${{ item }}"
  - {label: after, type: echo, text: "${{ join(steps.each.outputs, \" \") }}|${{ steps.each.counts.succeeded }}|${{ steps.each.results[0].text }}"}
`, tc.vars, tc.list)
			b, err := runPlan(t, src)
			if err != nil {
				t.Fatal(err)
			}
			rec, res := lastResult(t, b, "after")
			first, _, _ := strings.Cut(tc.want, " ")
			want := fmt.Sprintf("%s|%d|%s", tc.want, strings.Count(tc.want, " ")+1, first)
			if res["output"] != want {
				t.Errorf("after: %q, want %q (%s)", res["output"], want, rec.Error)
			}
			items := 0
			for _, s := range b.Steps() {
				if s.Parent == "each" {
					items++
					if l, i, ok := engine.SplitItemLabel(s.Label); !ok || l != "each" || i < 0 || s.Visit != 1 {
						t.Errorf("item record %s#%d", s.Label, s.Visit)
					}
				}
			}
			if items != strings.Count(tc.want, " ")+1 {
				t.Errorf("%d item records, want one per item", items)
			}
		})
	}
}

// An empty list runs no item and succeeds with counts of zero.
func TestForEachEmptyList(t *testing.T) {
	b, err := runPlan(t, `
version: 1
steps:
  - {label: each, type: echo, for_each: '[]', text: x}
  - {label: after, type: echo, text: "${{ steps.each.counts.total }} ${{ len(steps.each.outputs) }} ${{ steps.each.status }}"}
`)
	if err != nil {
		t.Fatal(err)
	}
	if _, res := lastResult(t, b, "after"); res["output"] != "0 0 succeeded" {
		t.Errorf("after: %q", res["output"])
	}
}

// A failed item fails the step, naming the item; with fail_fast false the
// others all run; continue_on_error lets the run go on and the counts say
// what happened.
func TestForEachFailures(t *testing.T) {
	b, err := runPlan(t, `
version: 1
steps:
  - label: each
    type: echo
    for_each: '["ok", "boom", "ok2", "boom"]'
    fail_fast: false
    max_concurrency: 1
    continue_on_error: true
    text: "${{ item }}"
  - {label: after, type: echo, text: "${{ steps.each.counts.succeeded }}/${{ steps.each.counts.failed }} ${{ steps.each.results[1].status }}"}
`)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := lastResult(t, b, "each")
	if rec.Status != "failed" || !strings.Contains(rec.Error, "2 of 4 items failed; first: step each[1]: boom") {
		t.Errorf("each: %s %q", rec.Status, rec.Error)
	}
	if _, res := lastResult(t, b, "after"); res["output"] != "2/2 failed" {
		t.Errorf("after: %q", res["output"])
	}

	// fail_fast (the default): the items not started are canceled.
	b, err = runPlan(t, `
version: 1
steps:
  - label: each
    type: echo
    for_each: '["boom", "a", "b"]'
    max_concurrency: 1
    text: "${{ item }}"
`)
	var re *engine.RunError
	if !errors.As(err, &re) || re.Label != "each" {
		t.Fatalf("run: %v", err)
	}
	_, res := lastResult(t, b, "each")
	counts, _ := res["counts"].(map[string]any)
	if counts["failed"] != 1.0 || counts["canceled"] != 2.0 {
		t.Errorf("counts %v, want 1 failed, 2 canceled", counts)
	}
}

// What for_each gives must be a list; that and a misspelt name are clear
// errors, at run time and at load time (with line:col) when the type is
// known from the plan.
func TestForEachBadInput(t *testing.T) {
	b, err := runPlan(t, `
version: 1
steps:
  - {label: each, type: echo, for_each: 'board("nothing")', text: x}
`)
	if err == nil || !strings.Contains(err.Error(), `for_each: board("nothing") gave null, want a list`) {
		t.Errorf("run: %v", err)
	}
	if len(b.Steps()) != 1 {
		t.Errorf("%d records", len(b.Steps()))
	}
	for _, tc := range []struct{ src, want string }{
		{"  - {label: each, type: echo, for_each: '[1] + itemz', text: x}\n", "plan.yaml:4:48: for_each: unknown name itemz"},
		{"  - {label: each, type: echo, for_each: '[1]', text: '${{ itme }}'}\n", `plan.yaml:4:59: in ${{ }}: unknown name itme (did you mean "item"?)`},
		{"  - {label: each, type: echo, text: '${{ item }}'}\n", "unknown name item"},
		{"  - {label: each, for_each: '[1]', parallel: [{label: a, type: echo, text: '${{ itme }}'}]}\n", `plan.yaml:4:81: in ${{ }}: unknown name itme (did you mean "item"?)`},
		{"  - {label: each, for_each: '[1]', parallel: [{label: a, type: echo, text: x}]}\n  - {label: b, type: echo, text: '${{ item }}'}\n", "plan.yaml:5:39: in ${{ }}: unknown name item"},
		{"  - {label: each, type: echo, for_each: '', text: x}\n", "for_each is empty"},
		{"  - {label: each, type: echo, for_each: '\"not a list\"', text: x}\n", `plan.yaml:4:41: for_each: "not a list" gives a string, want a list`},
		{"  - {label: each, type: echo, for_each: '${{ 1 + 2 }}', text: x}\n", `plan.yaml:4:41: for_each: 1 + 2 gives a number, want a list`},
		{"  - {label: each, type: echo, for_each: '{\"a\": 1}', text: x}\n", `plan.yaml:4:41: for_each: {"a": 1} gives a mapping, want a list`},
	} {
		_, err := engine.Compile("plan.yaml", []byte("version: 1\nsteps:\n  - {label: first, type: echo, text: x}\n"+tc.src), registry())
		var list plans.Errors
		if !errors.As(err, &list) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.src, err, tc.want)
		}
	}
}

// limits.max_steps counts items: a list that would pass it fails before
// any item runs.
func TestForEachCountsTowardMaxSteps(t *testing.T) {
	b, err := runPlan(t, `
version: 1
limits: {max_steps: 5}
steps:
  - {label: each, type: echo, for_each: '1..10', text: x}
`)
	if err == nil || !strings.Contains(err.Error(), "for_each gives 10 items, which would pass limits.max_steps 5") {
		t.Fatalf("run: %v", err)
	}
	for _, s := range b.Steps() {
		if s.Parent == "each" {
			t.Errorf("item %s ran", s.Label)
		}
	}
}

// BenchmarkForEach runs a for_each of n trivial items and, beside it, the
// same n steps written out by hand: ns/op and B/op per item should stay
// flat from 1,000 to 10,000 items, and near the written-out plan's.
func BenchmarkForEach(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		each := fmt.Sprintf("version: 1\nlimits: {max_steps: %d}\nsteps:\n  - {label: each, type: echo, for_each: '1..%d', max_concurrency: 4, text: '${{ item }}'}\n", n+1, n)
		var hand strings.Builder
		fmt.Fprintf(&hand, "version: 1\nlimits: {max_steps: %d}\nsteps:\n", n+1)
		for i := range n {
			fmt.Fprintf(&hand, "  - {label: s%d, type: echo, text: '${{ %d }}'}\n", i, i+1)
		}
		for _, p := range []struct{ name, src string }{{"for_each", each}, {"by_hand", hand.String()}} {
			b.Run(fmt.Sprintf("%s/items=%d", p.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					prog, err := engine.Compile("bench.yaml", []byte(p.src), registry())
					if err != nil {
						b.Fatal(err)
					}
					r := &engine.Runner{Prog: prog, Board: board.New(board.Run{ID: "bench"}), Log: zerolog.Nop()}
					if err := r.Run(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/item")
			})
		}
	}
}

package steps

import (
	"context"
	"fmt"
	"strings"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"gopkg.in/yaml.v3"
)

func init() { add(branchType{}) }

// branchType picks the first case whose `when` holds and jumps to its goto.
type branchType struct{}

// BranchResult is what a branch reports.
type BranchResult struct {
	Taken string `json:"taken"` // the goto target, "" when none matched and there was no default
	Case  int    `json:"case"`  // 1-based index of the matching case; 0 for default or none
}

type branchCase struct {
	when *engine.Expr
	dest string
}

type branchStep struct {
	cases []branchCase
	def   string
}

func (branchType) Name() string           { return "branch" }
func (branchType) Result() any            { return BranchResult{} }
func (branchType) Spec() *engine.TypeSpec { return &branchSpec }

var branchSpec = engine.TypeSpec{
	Doc: "Jumps: it tries its cases in order and goes to the goto of the first whose when holds, " +
		"else to its default, else on to the next step. Loops are branches back; each step's max_visits bounds them. " +
		"A branch is a top-level step, or a step of a sequence (steps: inside a parallel group), whose goto reaches only the sequence's own steps.",
	Fields: []engine.Field{
		{Name: "cases", Kind: engine.KindList,
			Schema: `{"items": {"type": "object", "additionalProperties": false, "required": ["when", "goto"],
				"properties": {
					"when": {"$ref": "#/$defs/expr", "description": "An expression.",
						"examples": ["steps.generate.visits < vars.max_attempts"]},
					"goto": {"type": "string",
						"description": "A top-level label (in a sequence: one of its steps), end (finish, succeeded) or fail (finish, failed).",
						"examples": ["generate"]}}}}`,
			Doc:      "Tried in order; the first whose when holds jumps to its goto.",
			Examples: []any{[]any{map[string]any{"when": "steps.test.passed", "goto": "end"}}}},
		{Name: "default", Kind: engine.KindString,
			Doc:      "Where to go when no case holds: a top-level label, end or fail (absent: the next step).",
			Examples: []any{"fail"}},
	},
	Example: `- label: test
  type: command
  run: go test ./...
  continue_on_error: true
- label: again
  type: branch
  cases:
    - when: steps.test.ok
      goto: end
    - when: steps.test.visits < 3
      goto: test
  default: fail`,
	Results: []engine.ResultField{
		{Name: "taken", Doc: "The goto target taken; empty when no case held and there is no default."},
		{Name: "case", Doc: "The 1-based index of the case that held; 0 for the default or none."},
	},
}

func (branchType) Decode(d *engine.Decoder) engine.Step {
	s := &branchStep{}
	if d.Step.Parent != nil && !d.Step.Parent.Sequence {
		d.Errorf(d.Step.TypeNode, "a branch cannot be inside parallel group %q: goto leaves the group (put it in a sequence, steps:, inside the group)", d.Step.Parent.Label)
	}
	casesN := d.Node("cases")
	defN := d.Node("default")
	if casesN == nil && defN == nil {
		d.Errorf(nil, "branch %q needs cases (and/or a default)", d.Label())
	}
	if casesN != nil {
		if casesN.Kind != yaml.SequenceNode {
			d.Errorf(casesN, "cases must be a list of {when, goto}, got %s", plans.KindName(casesN))
		} else {
			for _, cn := range casesN.Content {
				s.cases = append(s.cases, decodeCase(d, cn))
			}
		}
	}
	if defN != nil {
		s.def = gotoTarget(d, defN, "default")
	}
	return s
}

func decodeCase(d *engine.Decoder, n *yaml.Node) branchCase {
	var c branchCase
	r := d.Reporter()
	var whenN, gotoN *yaml.Node
	for _, f := range plans.Fields(r, n, "a case") {
		switch f.Key {
		case "when":
			whenN = plans.Resolve(f.Value)
		case "goto":
			gotoN = plans.Resolve(f.Value)
		default:
			plans.Unknown(r, f, "a case", []string{"when", "goto"})
		}
	}
	if whenN == nil {
		d.Errorf(n, "case is missing required field \"when\"")
	} else if whenN.Kind != yaml.ScalarNode {
		d.Errorf(whenN, "when must be an expression, got %s", plans.KindName(whenN))
	} else {
		c.when = d.ExprAt(whenN, "when")
	}
	if gotoN == nil {
		d.Errorf(n, "case is missing required field \"goto\"")
	} else {
		c.dest = gotoTarget(d, gotoN, "goto")
	}
	return c
}

// gotoTarget checks a goto: end, fail, or a top-level label.
func gotoTarget(d *engine.Decoder, n *yaml.Node, what string) string {
	dest, ok := plans.String(d.Reporter(), n, what)
	if !ok {
		return ""
	}
	if dest == "end" || dest == "fail" {
		return dest
	}
	target := d.Plan.Lookup(dest)
	if seq := d.Step.Parent; seq != nil && seq.Sequence {
		// In a sequence, a goto stays among its steps.
		if target == nil || target.Parent != seq {
			var labels []string
			for _, s := range seq.Steps {
				labels = append(labels, s.Label)
			}
			d.Errorf(n, "%s: no step labeled %q in sequence %s (a goto in a sequence reaches its own steps, end or fail)%s",
				what, dest, seq.Label, plans.Suggest(dest, append([]string{"end", "fail"}, labels...)))
		}
		return dest
	}
	switch {
	case target == nil:
		cands := append([]string{"end", "fail"}, topLabels(d.Plan)...)
		d.Errorf(n, "%s: no step labeled %q (a top-level label, end or fail)%s", what, dest, plans.Suggest(dest, cands))
	case target.Parent != nil:
		d.Errorf(n, "%s: step %q is inside parallel group %q; goto can only reach top-level steps", what, dest, target.Parent.Label)
	}
	return dest
}

func topLabels(p *plans.Plan) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, s.Label)
	}
	return out
}

// Branches lists where the branch can jump, for `runner graph`.
func (s *branchStep) Branches() []engine.Branch {
	var out []engine.Branch
	for _, c := range s.cases {
		if c.when != nil {
			out = append(out, engine.Branch{When: c.when.Src, To: c.dest})
		}
	}
	if s.def != "" {
		out = append(out, engine.Branch{To: s.def})
	}
	return out
}

// Describe is what a dry run shows.
func (s *branchStep) Describe() string {
	var b strings.Builder
	for _, c := range s.cases {
		if c.when != nil {
			fmt.Fprintf(&b, "when %s: goto %s\n", c.when.Src, c.dest)
		}
	}
	if s.def != "" {
		fmt.Fprintf(&b, "default: goto %s\n", s.def)
	} else {
		b.WriteString("otherwise: next step\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func (s *branchStep) Run(ctx context.Context, sc *engine.StepContext) (engine.Result, error) {
	for i, c := range s.cases {
		ok, err := sc.EvalBool(c.when)
		if err != nil {
			return engine.Result{}, fmt.Errorf("case %d: %w", i+1, err)
		}
		if ok {
			return engine.Result{Output: c.dest, Fields: BranchResult{Taken: c.dest, Case: i + 1}, Goto: c.dest}, nil
		}
	}
	res := BranchResult{Taken: s.def}
	return engine.Result{Output: s.def, Fields: res, Goto: s.def}, nil
}

// Caps: the step only reads expressions and the board: a workflow runs
// it inline and a replay runs it again; its output is where it went.
func (branchType) Caps() engine.Caps {
	return engine.Caps{Sched: engine.SchedPure, Replay: engine.ReplayRerun, Shows: engine.ShowsRoute}
}

package report

import (
	"strings"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
)

// runPlan is what the page reads of the run's plan, taken from it once:
// the plan itself (its steps and its text, 30 MB at 100k steps) is not
// held while the steps' views are made, and is parsed again only when a
// question's prompt is wanted from it.
type runPlan struct {
	name, desc string
	labels     []string        // every step's, in the plan's order
	tolerate   map[string]bool // the steps that fail under continue_on_error
	run        board.Run
	again      *plans.Plan // parsed again for a prompt; nil until then
}

// readPlan reads the run's plan; nil when it does not parse.
func readPlan(run board.Run) *runPlan {
	plan, _ := plans.ParseLeanText(run.PlanPath, run.PlanSource)
	if plan == nil {
		return nil
	}
	p := &runPlan{name: plan.Name, desc: strings.TrimSpace(plan.Description), tolerate: map[string]bool{}, run: run}
	for _, s := range plan.AllSteps() {
		// A copy: the plan's strings are parts of its text.
		p.labels = append(p.labels, strings.Clone(s.Label))
		if s.ContinueOnError {
			p.tolerate[p.labels[len(p.labels)-1]] = true
		}
	}
	p.name, p.desc = strings.Clone(p.name), strings.Clone(p.desc)
	return p
}

// prompt is the prompt step label's YAML writes, "" when there is none.
func (p *runPlan) prompt(label string) string {
	if p == nil {
		return ""
	}
	if p.again == nil {
		p.again, _ = plans.ParseLeanText(p.run.PlanPath, p.run.PlanSource)
		if p.again == nil {
			return ""
		}
	}
	ps := p.again.Lookup(label)
	if ps == nil {
		return ""
	}
	if ps.Node == nil { // let go of (plans.ParseLean)
		if f, err := p.again.Reparse(ps); err == nil {
			ps = f
		}
	}
	return field(ps.Node, "prompt")
}

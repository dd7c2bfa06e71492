package plans

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// A plan read by ParseLean keeps, for each top-level step whose YAML it
// let go, where the step's lines are in its text: what compiles or runs
// the step reads them again (RestoreNodes, Reparse), one step's tree at a
// time. The text is the plan's one copy (Plan.Source), so the only cost
// kept per step is its span.

// LetGo is whether ParseLean let go of the step's YAML: its nodes are nil
// until RestoreNodes, and Reparse reads it again.
func (s *Step) LetGo() bool { return s.text.end > 0 }

// hasCall is whether s or a step inside it calls a plan: such a step keeps
// its YAML, which loading the callee reads once the plan is read whole.
func (s *Step) hasCall() bool {
	if s.Type == CallType {
		return true
	}
	for _, c := range s.Parallel {
		if c.hasCall() {
			return true
		}
	}
	for _, c := range s.Steps {
		if c.hasCall() {
			return true
		}
	}
	return false
}

// Reparse reads step s of p again from p's text: a new Step equal to s,
// with its YAML nodes and those of the steps inside it. s is a step that
// let go of its YAML (LetGo) or one inside it. s is left as it is, so
// steps may be read again concurrently.
func (p *Plan) Reparse(s *Step) (*Step, error) {
	var path []*Step // from s up to the top-level step, which has the text
	top := s
	for top.Parent != nil {
		path = append(path, top)
		top = top.Parent
	}
	f, err := p.reparseTop(top)
	if err != nil {
		return nil, err
	}
	for i := len(path) - 1; i >= 0; i-- {
		var in *Step
		for _, c := range append(f.Parallel[:len(f.Parallel):len(f.Parallel)], f.Steps...) {
			if c.Index == path[i].Index && c.Label == path[i].Label {
				in = c
			}
		}
		if in == nil {
			return nil, fmt.Errorf("step %s: read again, %s no longer holds it", s.Label, f.Label)
		}
		f = in
	}
	return f, nil
}

// reparseTop is Reparse of a top-level step.
func (p *Plan) reparseTop(s *Step) (*Step, error) {
	t := s.text
	if t.end == 0 {
		return nil, fmt.Errorf("step %s: its YAML was not let go of, so it is not read again", s.Label)
	}
	if int(t.end) > len(p.Source) {
		return nil, fmt.Errorf("step %s: its lines (from line %d) are not in the plan's text", s.Label, t.line)
	}
	doc, ok := fastYAMLWith(p.Source[t.off:t.end], int(t.line)-1, nil)
	if !ok || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.SequenceNode || len(doc.Content[0].Content) != 1 {
		return nil, fmt.Errorf("step %s: its lines (from line %d) no longer read as one step", s.Label, t.line)
	}
	scratch := &Plan{Path: p.Path, Source: p.Source, labels: map[string]*Step{}}
	r := &Reporter{File: p.Path}
	f := parseStep(r, scratch, doc.Content[0].Content[0], s.Parent)
	if f == nil || f.Label != s.Label || f.Type != s.Type {
		return nil, fmt.Errorf("step %s: its lines (from line %d) no longer read as this step", s.Label, t.line)
	}
	f.Index, f.text = s.Index, s.text
	return f, nil
}

// RestoreNodes gives step s of p (LetGo) and the steps inside it their
// YAML nodes again, read from p's text, until DropNodes.
func (p *Plan) RestoreNodes(s *Step) error {
	f, err := p.reparseTop(s)
	if err != nil {
		return err
	}
	return copyNodes(s, f)
}

// copyNodes sets the YAML nodes of to and the steps inside it to those
// of from, the same step read again.
func copyNodes(to, from *Step) error {
	if len(to.Parallel) != len(from.Parallel) || len(to.Steps) != len(from.Steps) {
		return fmt.Errorf("step %s: read again, it holds other steps", to.Label)
	}
	to.Node, to.TypeNode = from.Node, from.TypeNode
	if to.NeedsNode != from.NeedsNode {
		to.Own().NeedsNode = from.NeedsNode
	}
	if to.If != nil && from.If != nil {
		to.If.Node = from.If.Node
	}
	if to.Retry != nil && from.Retry != nil {
		to.Retry.Node = from.Retry.Node
		if to.Retry.Until != nil && from.Retry.Until != nil {
			to.Retry.Until.Node = from.Retry.Until.Node
		}
	}
	if to.Write != nil && from.Write != nil {
		to.Write.KeyNode = from.Write.KeyNode
	}
	if to.ForEach != nil && from.ForEach != nil {
		to.ForEach.Node = from.ForEach.Node
	}
	for i, c := range to.Parallel {
		if err := copyNodes(c, from.Parallel[i]); err != nil {
			return err
		}
	}
	for i, c := range to.Steps {
		if err := copyNodes(c, from.Steps[i]); err != nil {
			return err
		}
	}
	return nil
}

package engine

import (
	"fmt"
	"sync"

	"github.com/planrunner/runner/internal/plans"
	"gopkg.in/yaml.v3"
)

// A plan compiled by CompileChecked (the unchanged plan of a resumed run,
// checked whole when the run started) has each step decoded by its type
// when the step first runs, not when the plan loads: resuming a
// 100k-step run to re-run one step would spend a fifth of its CPU
// decoding steps that had all run already. A top-level step's YAML is
// read again from the plan's text then (plans.ParseLean, Plan.Reparse);
// a step inside a group keeps its part of the YAML tree until then.
// Calls are decoded at once: compiling a call reads its callee.

// lazyImpl is a step's Impl, decoded once, on first use.
type lazyImpl struct {
	once   sync.Once
	decode func() (Step, error)
	impl   Step
	err    error
}

// impl is the step's decoded Impl, decoding it on first use. Use it, not
// Impl, wherever a Program may come from CompileChecked.
func (n *Node) impl() (Step, error) {
	if n.lazy == nil {
		return n.Impl, nil
	}
	n.lazy.once.Do(func() { n.lazy.impl, n.lazy.err = n.lazy.decode() })
	return n.lazy.impl, n.lazy.err
}

// decodeLater is the decode of step s by type t in scope, run when the
// step first runs. Its problems (none, for a plan checked whole before)
// are the step's error.
func decodeLater(plan *plans.Plan, s *plans.Step, file string, scope *Scope, t Type) func() (Step, error) {
	return func() (Step, error) {
		at := s
		if s.LetGo() {
			// Read again from the plan's text (plans.ParseLean), into a
			// copy: steps first run together read theirs together.
			f, err := plan.Reparse(s)
			if err != nil {
				return nil, err
			}
			at = f
		}
		r := &plans.Reporter{File: file}
		d := newDecoder(plan, at, r, scope)
		d.spec = SpecOf(t)
		impl := t.Decode(d)
		d.finish()
		s.Node, s.TypeNode = nil, nil // see compile: a run needs no YAML
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("step %s: %w", s.Label, err)
		}
		if impl == nil {
			return nil, fmt.Errorf("step %s: type %s decoded no step", s.Label, s.Type)
		}
		return impl, nil
	}
}

// keptNodes are the YAML of the steps still to be decoded, kept over
// Plan.DropNodes.
type keptNodes []struct {
	s              *plans.Step
	node, typeNode *yaml.Node
}

// lazyNodes lists the steps of p whose types decode them later.
func (p *Program) lazyNodes() keptNodes {
	var out keptNodes
	for _, s := range p.undecoded {
		out = append(out, struct {
			s              *plans.Step
			node, typeNode *yaml.Node
		}{s, s.Node, s.TypeNode})
	}
	p.undecoded = nil
	return out
}

func (k keptNodes) restore() {
	for _, x := range k {
		x.s.Node, x.s.TypeNode = x.node, x.typeNode
	}
}

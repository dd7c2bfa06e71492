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
//
// A plan compiled by CompileToRun is checked whole, step by step, and a
// top-level step's decoded fields are let go of once it is checked: held
// from the check to the step's first run, they were a third of what a
// 100k-step run held as it started, and with the board's rows they set
// its peak. Such a step, and any top-level step of a CompileChecked plan,
// is decoded again from the plan's text when it runs and its decode is
// not among the program's last implCacheSize (a loop's body stays
// there). Decoding a step is cheap since its expressions are compiled
// when first evaluated (Expr.deferred): every step of a 100k-step plan
// decoded twice cost its run 4% more CPU for a peak 13% lower. The
// plan's first firstsKept steps keep theirs for their first run: a run's
// memory peaks at its end, with the board at its largest, and these go
// early; a plan of up to that many steps is decoded once, as before
// (decoded twice, a 10k-step plan's run took 13% more CPU).

// firstsKept bounds the decodes a plan compiled for its run keeps from
// its check, for the first runs of its first steps (a variable for the
// tests).
var firstsKept = 16384

// firstImpls are the decodes of a program's first steps, each until the
// step's first run takes it.
type firstImpls struct {
	mu   sync.Mutex
	m    map[*lazyImpl]Step
	kept int
}

// keepFirst keeps impl, the decode l's step was checked with, if fewer
// than firstsKept were.
func (p *Program) keepFirst(l *lazyImpl, impl Step) {
	f := &p.firsts
	f.mu.Lock()
	defer f.mu.Unlock()
	if impl == nil || f.kept >= firstsKept {
		return
	}
	if f.m == nil {
		f.m = map[*lazyImpl]Step{}
	}
	f.m[l] = impl
	f.kept++
}

// takeFirst is the decode kept for l's first run, if any, no longer kept.
func (p *Program) takeFirst(l *lazyImpl) (Step, bool) {
	f := &p.firsts
	f.mu.Lock()
	defer f.mu.Unlock()
	impl, ok := f.m[l]
	if ok {
		delete(f.m, l)
		if len(f.m) == 0 {
			f.m = nil // a map keeps its room when emptied
		}
	}
	return impl, ok
}

// implCacheSize bounds the decoded steps a program keeps that it can
// decode again.
const implCacheSize = 256

// implCache holds the most recently used decoded steps of a program.
type implCache = lru[*lazyImpl, Step]

// lazyImpl is a step's Impl, decoded when the step runs: node n of prog
// (its step, by its type) in scope. One per step of a large plan: it
// holds what the decode needs and no more. The copies of n made for a
// for_each item or a call share it.
type lazyImpl struct {
	prog  *Program
	n     *Node
	scope *Scope
	// kept is set on a step not read from the plan's text when decoded
	// (its YAML kept in the tree): decoded once and kept. Otherwise its
	// decode may be let go of and made again; prog.impls holds the
	// recent ones.
	kept *keptImpl
}

type keptImpl struct {
	once sync.Once
	impl Step
	err  error
}

// lazily is the lazyImpl of node n of p in scope: decoded again whenever
// it runs if its step is read from the plan's text, else once.
func (p *Program) lazily(n *Node, scope *Scope) *lazyImpl {
	l := &lazyImpl{prog: p, n: n, scope: scope}
	if !n.Step.LetGo() {
		l.kept = &keptImpl{}
	}
	return l
}

// impl is the step's decoded Impl, decoding it when needed. Use it, not
// Impl, wherever a Program may come from CompileChecked or CompileToRun.
func (n *Node) impl() (Step, error) {
	l := n.lazy
	if l == nil {
		return n.Impl, nil
	}
	if k := l.kept; k != nil {
		k.once.Do(func() { k.impl, k.err = l.decode() })
		return k.impl, k.err
	}
	if impl, ok := l.prog.takeFirst(l); ok {
		l.prog.impls.put(l, impl)
		return impl, nil
	}
	if impl, ok := l.prog.impls.get(l); ok {
		return impl, nil
	}
	impl, err := l.decode()
	if err != nil {
		return nil, err
	}
	l.prog.impls.put(l, impl)
	return impl, nil
}

// decode decodes the step. Its problems (none, for a plan checked whole
// before) are the step's error.
func (l *lazyImpl) decode() (Step, error) {
	s, t, plan := l.n.Step, l.n.Kind, l.prog.Plan
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
	r := &plans.Reporter{File: plan.Path}
	d := newDecoder(plan, at, r, l.scope)
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

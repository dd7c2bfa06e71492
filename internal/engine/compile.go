package engine

import (
	"errors"
	"github.com/expr-lang/expr/checker/nature"
	"github.com/expr-lang/expr/types"
	"reflect"
	"strings"

	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/sys/readlimit"
)

// Program is a plan checked and compiled against the registered step
// types: every step decoded by its type, every expression compiled.
type Program struct {
	Plan  *plans.Plan
	Steps []*Node // top level, in order
	// Types are the step types it was compiled with: the Caps of a type
	// a saved record names (Registry.Caps).
	Types *Registry
	nodes map[string]*Node
	scope *Scope
	env   []*Template // the plan's env values with ${{ }} (nil where plain)

	itemScope *Scope // see eachScope

	outputs     []output             // the plan's declared outputs (a callee's)
	outputTypes types.Map            // their types
	agents      map[string]string    // a callee's agent names to the run's (nil at the top)
	tools       map[string]*PlanTool // the plan's own tools (plantools.go)
	// deferDecode: its steps' types decode them when they first run
	// (CompileChecked; lazyimpl.go).
	deferDecode bool
	undecoded   []*plans.Step // theirs, until compile keeps their YAML
	// runScope is the scope a CompileToRun plan's top-level steps are
	// decoded again in when they run; nil in other plans.
	runScope *Scope
	impls    *implCache // the decoded steps it keeps (lazyImpl)
	firsts   firstImpls // the decodes its first steps were checked with
	progs    *progCache // its expressions' compiled programs (Expr.program)
	// slots: a run keeps what it has of each of its nodes at the node's
	// number (plans.Step.Ord), in a slice this long; 0 if the numbers
	// cannot serve (numberNodes), and a run keeps them by label.
	slots int
}

// Node is one compiled step.
type Node struct {
	*plans.Step
	Kind Type // nil for a parallel group
	Impl Step // nil in a CompileChecked or CompileToRun program: read impl()
	If   *Expr
	// lazy decodes Impl when the step runs (CompileChecked, CompileToRun;
	// see lazyImpl): Impl is then nil, and impl() is what runs it.
	lazy *lazyImpl
	// nodeMore holds what few steps have: most are one step of one type
	// with an if at most, and a plan of 100k steps held a quarter of a
	// kilobyte each for the rest. Never nil: noMore when it holds nothing.
	*nodeMore
}

// nodeMore is the part of a Node few steps have. A node shares noMore
// until it sets one of these (more); a copy of a node gets its own before
// it sets any (copyMore).
type nodeMore struct {
	// inEach: n is inside a for_each group or sequence (eachgroup.go),
	// so its fields see item and index.
	inEach   bool
	Until    *Expr
	WriteKey *Template
	Children []*Node
	Seq      []*Node // a sequence's steps (see sequence.go)
	dag      *dag    // a group whose children have needs (needs.go)
	// Each is a for_each step's list (see foreach.go); item is set on
	// the nodes of its items.
	Each *Expr
	item *itemOf
	// Sub is a call's callee (subplan.go) and callVars the vars it passes.
	Sub      *Program
	callVars []callVar
	// A callee's step instantiated under its call (Node.under): local is
	// its label in its own file, frame the call label whose evaluator its
	// expressions use; agents maps its plan's agent names to the run's.
	local, frame string
	agents       map[string]string
	tools        map[string]*PlanTool // its plan's tools, for its llm step
}

// noMore is the nodeMore of every node that has none of its fields: read,
// never written.
var noMore = &nodeMore{}

// more is n's own nodeMore, to set a field of.
func (n *Node) more() *nodeMore {
	if n.nodeMore == noMore || n.nodeMore == nil {
		n.nodeMore = &nodeMore{}
	}
	return n.nodeMore
}

// copyMore gives a copy of a node its own nodeMore, which it may set
// without changing the node it was copied from.
func (n *Node) copyMore() {
	m := *n.nodeMore
	n.nodeMore = &m
}

// Node returns the compiled step with label; for LABEL[i], item i of
// for_each step LABEL, without its value (see WithItem); for CALL/LABEL a
// callee's step under its call, and for G[i]/LABEL a step of item i of
// for_each block G, at any depth.
func (p *Program) Node(label string) *Node {
	if n, ok := p.nodes[label]; ok {
		return n
	}
	if l, i, ok := SplitItemLabel(label); ok {
		if n := p.Node(l); n != nil && n.Each != nil {
			return n.itemNode(i, nil)
		}
		return nil
	}
	head, tail, ok := cutLast(label, "/")
	if !ok || tail == "" {
		return nil
	}
	h := p.Node(head)
	switch {
	case h == nil:
		return nil
	case h.Sub != nil:
		inner := h.Sub.Node(tail)
		if inner == nil {
			return nil
		}
		return inner.under(head)
	case h.item != nil && h.isBlock():
		return h.descendant(tail)
	}
	return nil
}

// Load reads a plan file and compiles it.
func Load(path string, reg *Registry) (*Program, error) {
	src, err := readlimit.File(path, readlimit.Plan)
	if err != nil {
		return nil, err
	}
	return Compile(path, src, reg)
}

// Compile checks a plan's source and compiles it. Every problem, from the
// YAML structure to a misspelt name deep in an expression, comes back at
// once as plans.Errors.
func Compile(path string, src []byte, reg *Registry) (*Program, error) {
	return compile(path, src, reg, whole)
}

// CompileChecked compiles a plan this runner has checked whole before
// (the unchanged plan of a run being resumed, or replayed): the YAML, the
// steps and their fields are checked as Compile does, but each of its own
// expressions is type-checked and compiled when it is first evaluated,
// since most of a resumed run's are never evaluated again. A called
// plan, read from its own file, is checked whole. Never use it for a plan
// that has not been through Compile: an expression's mistake would show
// only when a step reaches it.
func CompileChecked(path string, src []byte, reg *Registry) (*Program, error) {
	return compile(path, src, reg, checkedBefore)
}

// CompileToRun is Compile for a plan about to run: checked whole, with
// every problem reported as Compile does, but read one step at a time,
// and with each top-level step's decoded fields let go of once the step
// has run, to be decoded again from the plan's text if it runs again
// (lazyimpl.go). A large plan's run then holds neither its whole YAML
// tree nor the decoded fields of every step that has run. What reads a
// step's Impl directly (a graph of the plan) wants Compile.
func CompileToRun(path string, src []byte, reg *Registry) (*Program, error) {
	return compile(path, src, reg, toRun)
}

// LoadToRun reads a plan file and compiles it with CompileToRun.
func LoadToRun(path string, reg *Registry) (*Program, error) {
	src, err := readlimit.File(path, readlimit.Plan)
	if err != nil {
		return nil, err
	}
	return CompileToRun(path, src, reg)
}

// compileMode is how a plan is compiled: Compile, CompileChecked or
// CompileToRun.
type compileMode int

const (
	whole compileMode = iota
	checkedBefore
	toRun
)

func compile(path string, src []byte, reg *Registry, mode compileMode) (*Program, error) {
	// A plan checked before, or about to run, has its steps' YAML read
	// one step at a time (plans.ParseLean): the whole tree was most of a
	// large plan's peak. Reading each step twice costs a large plan's
	// run about a twentieth of its CPU; reading the tree whole while
	// noting each step's lines set a higher peak than the run's end.
	// Compile, whose callers read the plan whole (validate, graph),
	// reads the tree once.
	parse := plans.Parse
	if mode != whole {
		parse = plans.ParseLean
	}
	plan, err := parse(path, src)
	var list plans.Errors
	if err != nil {
		if !errors.As(err, &list) {
			return nil, err
		}
	}
	r := &plans.Reporter{File: path, List: list}
	prog := compilePlan(r, plan, reg, nil, mode)
	// A run needs neither the YAML tree nor the expression types: every
	// position is in the problems already reported. Keeping them cost
	// most of the memory a loaded plan held. A step whose type decodes
	// it when it first runs (deferred) keeps its own.
	kept := prog.lazyNodes()
	plan.DropNodes()
	kept.restore()
	if err := r.Err(); err != nil {
		return prog, err
	}
	return prog, nil
}

// compilePlan compiles a parsed plan: the run's, or a callee (agents
// then maps its agent names to the run's).
// mode is how the plan is compiled; a callee is compiled whole.
func compilePlan(r *plans.Reporter, plan *plans.Plan, reg *Registry, agents map[string]string, mode compileMode) *Program {
	deferred := mode == checkedBefore
	prog := &Program{Plan: plan, Types: reg, nodes: map[string]*Node{}, agents: agents, deferDecode: deferred, impls: newLRU[*lazyImpl, Step](implCacheSize)}
	// Callees first: a call's steps.X.outputs has the types of the
	// callee's outputs.
	subs := map[string]*Program{}
	calls := map[string]types.Map{}
	for _, s := range plan.Calls() {
		if sub := prog.compileCallee(r, reg, s); sub != nil {
			subs[s.Label] = sub
			calls[s.Label] = sub.outputTypes
		}
	}
	prog.scope = planScope(plan, reg, calls)
	prog.scope.deferred = deferred
	prog.progs = prog.scope.progs
	if !deferred {
		prog.scope.compiled = map[exprKey]checked{}
	}
	prog.env = compilePlanEnv(r, plan, prog.scope)
	prog.scope.secretEnv = secretEnvNames(plan, prog.env)
	if mode == toRun {
		// A step decoded again when it runs was checked here: its
		// expressions are compiled on first use, as CompileChecked's.
		prog.runScope = &Scope{nature: prog.scope.nature, steps: prog.scope.steps, secretEnv: prog.scope.secretEnv, deferred: true, progs: prog.progs}
	}
	prog.tools = prog.compileTools(r, reg)
	prog.Steps = prog.compileSteps(r, reg, plan.Steps, prog.scope)
	for _, n := range prog.nodes {
		if sub := subs[n.Label]; sub != nil && n.Kind != nil {
			n.more().Sub = sub
			prog.compileCallVars(r, n)
		}
	}
	prog.numberNodes()
	prog.outputTypes = prog.compileOutputs(r)
	prog.scope.compiled = nil
	prog.scope = nil
	// Every label is among the nodes now: the plan's own index of them
	// can go (a step decoded again looks its goto targets up here).
	plan.LookupWith(func(label string) *plans.Step {
		if n := prog.nodes[label]; n != nil {
			return n.Step
		}
		return nil
	})
	return prog
}

// compileSteps compiles steps in scope: the plan's, or, inside a for_each
// group or sequence, the plan's with item and index (eachScope).
func (p *Program) compileSteps(r *plans.Reporter, reg *Registry, steps []*plans.Step, scope *Scope) []*Node {
	out := make([]*Node, 0, len(steps))
	for _, s := range steps {
		// A step whose YAML the parse let go of (plans.ParseLean) is read
		// again from the text here, one step's tree at a time, and lets
		// go of it once compiled. A plan compiled by CompileChecked reads
		// a step's YAML only for the fields compiled now; its type
		// decodes it when it first runs (lazyImpl).
		letGo := s.LetGo() && s.Node == nil
		if letGo && (!p.deferDecode || needsNodes(s)) {
			if err := p.Plan.RestoreNodes(s); err != nil {
				r.AtPos(s.Line, 1, "%v", err)
				continue
			}
		}
		n := &Node{Step: s, nodeMore: noMore}
		if scope != p.scope {
			n.more().inEach = true
		}
		if p.agents != nil || p.tools != nil {
			n.more().agents, n.more().tools = p.agents, p.tools
		}
		if s.Label != "" {
			p.nodes[s.Label] = n
		}
		if s.If != nil {
			n.If = compileBoolAt(r, p.Plan.Source, s.If, "if", scope)
		}
		// A for_each step's own fields see item and index; its if and its
		// list are decided once, before the items. The steps inside a
		// for_each group or sequence run once per item: they see them too.
		own := scope
		if s.ForEach != nil {
			if s.ForEach.Src != "" {
				n.more().Each = compileValueAt(r, p.Plan.Source, s.ForEach, "for_each", scope)
				if n.Each != nil {
					checkEachType(r, s.ForEach, n.Each)
				}
			}
			if n.Each == nil {
				n.more().Each = &Expr{} // reported; still a for_each for what follows
			}
			own = p.eachScope()
		}
		if s.Retry != nil && s.Retry.Until != nil {
			stepT := scope.stepType(s.Label)
			if s.ForEach != nil {
				stepT = natureOf(stepStateType(reg.lookupType(s.Type)), map[uintptr]nature.Nature{})
			}
			scope := own.withStep(stepT)
			n.more().Until = compileBoolAt(r, p.Plan.Source, s.Retry.Until, "retry.until", scope)
		}
		if s.Write != nil && s.Write.KeyNode != nil {
			n.more().WriteKey = compileTemplateAt(r, p.Plan.Source, s.Write.KeyNode, s.Write.Key, own)
			CheckKeyTemplate(r, s.Write.KeyNode, n.WriteKey, "write.key")
		}
		switch {
		case s.Parallel != nil:
			n.more().Children = p.compileSteps(r, reg, s.Parallel, own)
			n.more().dag = compileNeeds(n.Children)
		case s.Sequence:
			n.more().Seq = p.compileSteps(r, reg, s.Steps, own)
		case s.Type != "":
			t, ok := reg.Lookup(s.Type)
			if !ok {
				r.At(s.TypeNode, "unknown step type %q (known: %s)%s", s.Type, strings.Join(reg.Names(), ", "), plans.Suggest(s.Type, reg.Names()))
				continue
			}
			n.Kind = t
			if p.deferDecode && s.Type != plans.CallType {
				n.lazy = p.lazily(n, own)
				if !s.LetGo() {
					p.undecoded = append(p.undecoded, s)
				}
				break
			}
			d := newDecoder(p.Plan, s, r, own)
			d.spec = SpecOf(t)
			n.Impl = t.Decode(d)
			d.finish()
			if p.runScope != nil && letGo && own == p.scope && s.Type != plans.CallType {
				// Checked: its first run takes this decode if it is
				// among the first kept, and its runs decode it again
				// from the text (lazyimpl.go).
				n.lazy = p.lazily(n, p.runScope)
				p.keepFirst(n.lazy, n.Impl)
				n.Impl = nil
			}
		}
		if n.lazy == nil && s.Type != plans.CallType {
			// The step is decoded and its problems reported with their
			// positions: its part of the YAML tree can go now rather than
			// when the whole plan is compiled (Plan.DropNodes), so the
			// tree and the compiled steps are not both whole at once.
			s.Node, s.TypeNode = nil, nil
		}
		// A group's steps in a CompileChecked plan keep their YAML for
		// lazyImpl (Program.undecoded) until the plan is compiled.
		if letGo && (!p.deferDecode || (s.Parallel == nil && s.Steps == nil)) {
			s.DropNodes()
		}
		out = append(out, n)
	}
	return out
}

// needsNodes is whether compiling s reads its YAML beyond what its type
// decodes: fields every step may have, and the steps inside it.
func needsNodes(s *plans.Step) bool {
	return s.If != nil || s.ForEach != nil || s.Retry != nil || s.Write != nil || s.Parallel != nil || s.Steps != nil
}

// trimWrapper removes a ${{ }} around a whole bare expression.
func trimWrapper(s string) string {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "${{") && strings.HasSuffix(t, "}}") && strings.Count(t, "${{") == 1 {
		return strings.TrimSpace(t[3 : len(t)-2])
	}
	return s
}

// trimLeftWrapper is s from the start of the wrapped expression on.
func trimLeftWrapper(s string) string {
	i := strings.Index(s, "${{") + 3
	return strings.TrimLeft(s[i:], " \t")
}

// checkEachType refuses at load a for_each list whose type the checker
// knows is not a list (a string var, a number, a mapping), which the run
// would refuse at the step.
func checkEachType(r *plans.Reporter, x *plans.Expr, e *Expr) {
	if e.typ == nil {
		return
	}
	var what string
	switch e.typ.Kind() {
	case reflect.String:
		what = "a string"
	case reflect.Bool:
		what = "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		what = "a number"
	case reflect.Map, reflect.Struct:
		what = "a mapping"
	default:
		return
	}
	r.At(x.Node, "for_each: %s gives %s, want a list (an empty list runs no item)", strings.TrimSpace(trimWrapper(x.Src)), what)
}

// numberNodes sets p.slots if every node has a number of its own within
// the plan's (plans.Step.Ord), as a parsed plan's do.
func (p *Program) numberNodes() {
	max := p.Plan.Numbered()
	taken := make([]bool, max+1)
	for label, n := range p.nodes {
		o := int(n.Step.Ord)
		if o <= 0 || o > max || taken[o] || n.Label != label {
			p.slots = 0
			return
		}
		taken[o] = true
	}
	p.slots = max + 1
}

// slotOf is label's place in what a run keeps by node (slots), 0 for a
// label that has none: not a node of p, or p numbers none.
func (p *Program) slotOf(label string) int {
	if p.slots == 0 {
		return 0
	}
	if n := p.nodes[label]; n != nil {
		return int(n.Step.Ord)
	}
	return 0
}

package plans

import (
	"path/filepath"
	"strings"

	"github.com/planrunner/runner/internal/sys/readlimit"
	"gopkg.in/yaml.v3"
)

// A sub-plan call: a step of `type: plan` runs another plan file (its
// `plan:`, relative to the calling plan's file) with `vars:` and gives
// back the callee's declared `outputs:`. The loader reads the callee here,
// so every problem in it is reported with the callee's file name and its
// own line:col, and a chain of calls that comes back to a file it left
// is refused before anything runs (a cycle could only run until a limit
// stopped it).

// CallType is the `type:` of a sub-plan call.
const CallType = "plan"

// MaxCallDepth bounds how deeply calls may nest (a plan calling a plan
// calling ...): with cycles refused, only a very long chain of distinct
// files reaches it, and a plan that deep is a mistake.
const MaxCallDepth = 8

// CallFields are the call step's own fields.
var CallFields = []string{"plan", "vars", "agents"}

// Call is a `type: plan` step's call of another plan.
type Call struct {
	Path string     // as written in `plan:`
	File string     // resolved: relative to the caller's directory
	Plan *Plan      // the callee, loaded and checked (nil when it could not be read)
	Vars []CallVar  // the vars passed, in the order written
	Node *yaml.Node // the `plan:` value
	// Agents maps an agent name of the callee to the caller's agent that
	// stands in for it (`agents: {coder: fixer}`). A callee agent not
	// passed runs as the callee defines it, under the name
	// CALL/AGENT in the run's agent set (see AgentName).
	Agents map[string]string
}

// CallVar is one var passed to a callee: its value as written (a literal
// or a ${{ }} the engine compiles in the caller's scope).
type CallVar struct {
	Name string
	Node *yaml.Node
}

// Output is one of a plan's declared outputs: what a call of it gives
// back, an expression over the callee's steps and vars.
type Output struct {
	Name string
	Expr *Expr
}

// AgentName is the run-wide name of callee agent name at call step label:
// the caller's agent passed for it, or the callee's own under
// LABEL/NAME.
func (c *Call) AgentName(label, name string) string {
	if to, ok := c.Agents[name]; ok {
		return to
	}
	return label + "/" + name
}

// loadState is what loading one plan file carries into the files it
// calls: the chain of files (for cycles) and its depth.
type loadState struct {
	chain []string // absolute paths, the top plan first
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return filepath.Clean(a)
	}
	return filepath.Clean(p)
}

// parseCall reads a call step's own fields and loads its callee.
func parseCall(r *Reporter, p *Plan, s *Step, has fieldMap) *Call {
	c := &Call{Agents: map[string]string{}}
	pn, ok := has.get("plan")
	if !ok {
		return c // the type's decoder reports it
	}
	c.Node = Resolve(pn)
	path, ok := String(r, pn, "plan")
	if !ok {
		return c
	}
	if strings.TrimSpace(path) == "" {
		r.At(pn, "plan is empty; it names the plan file to call, relative to this one")
		return c
	}
	c.Path = path
	c.File, c.Plan = loadCallee(r, p, pn, path)
	callee := c.Plan
	if callee == nil {
		return c
	}
	if vn, ok := has.get("vars"); ok {
		for _, f := range Fields(r, vn, "vars") {
			if _, known := callee.VarDefault(f.Key); !known {
				r.At(f.KeyN, "vars: %s has no var %q (its vars: %s)%s", path, f.Key, strings.Join(callee.varNames(), ", "), Suggest(f.Key, callee.varNames()))
				continue
			}
			c.Vars = append(c.Vars, CallVar{Name: f.Key, Node: f.Value})
		}
	}
	if an, ok := has.get("agents"); ok {
		for _, f := range Fields(r, an, "agents") {
			to, ok := String(r, f.Value, "agents."+f.Key)
			switch {
			case !ok:
			case callee.Agent(f.Key) == nil:
				r.At(f.KeyN, "agents: %s has no agent %q (its agents: %s)%s", path, f.Key, strings.Join(callee.AgentNames(), ", "), Suggest(f.Key, callee.AgentNames()))
			case p.Agent(to) == nil:
				r.At(f.Value, "agents.%s: no agent named %q in this plan's agents%s", f.Key, to, Suggest(to, p.AgentNames()))
			default:
				c.Agents[f.Key] = to
			}
		}
	}
	// The callee's own agents (those not passed) join the caller's, named
	// under the call, so one agent set serves the whole run.
	joinCalleeAgents(p, callee, c.File, c.Agents, func(name string) string { return c.AgentName(s.Label, name) })
	return c
}

// joinCalleeAgents adds callee's agents (but those passed) to p's, each
// under its run-wide name.
func joinCalleeAgents(p, callee *Plan, file string, passed map[string]string, name func(string) string) {
	for _, a := range callee.Agents {
		if _, ok := passed[a.Name]; ok {
			continue
		}
		cp := *a
		cp.Name = name(a.Name)
		cp.Fallback = make([]string, len(a.Fallback))
		for i, fb := range a.Fallback {
			cp.Fallback[i] = name(fb)
		}
		if cp.ResponsesFile != "" && !filepath.IsAbs(cp.ResponsesFile) {
			cp.ResponsesFile = filepath.Join(filepath.Dir(absPath(file)), cp.ResponsesFile)
		}
		p.Agents = append(p.Agents, &cp)
	}
}

// loadCallee reads and checks the plan file path (as written at pn,
// relative to p's file) that p calls, by a `type: plan` step or a tool's
// `plan:`: a chain of calls that comes back to a file it left, or nests
// more than MaxCallDepth deep, is refused. It gives the resolved file and
// the callee (nil when it could not be read).
func loadCallee(r *Reporter, p *Plan, pn *yaml.Node, path string) (string, *Plan) {
	file := path
	if !filepath.IsAbs(path) {
		file = filepath.Join(filepath.Dir(p.Path), path)
	}
	abs := absPath(file)
	st := p.load
	if st == nil {
		st = &loadState{chain: []string{absPath(p.Path)}}
	}
	for i, f := range st.chain {
		if f == abs {
			names := make([]string, 0, len(st.chain)-i+1)
			for _, g := range st.chain[i:] {
				names = append(names, filepath.Base(g))
			}
			names = append(names, filepath.Base(abs))
			r.At(pn, "plan %s: calls form a cycle: %s (a plan may not call itself, directly or through others)", path, strings.Join(names, " → "))
			return file, nil
		}
	}
	if len(st.chain) >= MaxCallDepth {
		r.At(pn, "plan %s: calls nest more than %d plans deep", path, MaxCallDepth)
		return file, nil
	}
	src, err := readlimit.File(file, readlimit.Plan)
	if err != nil {
		r.At(pn, "plan %s: %v (the path is relative to %s)", path, err, filepath.Dir(absPath(p.Path)))
		return file, nil
	}
	callee, err := parse(file, src, &loadState{chain: append(append([]string(nil), st.chain...), abs)}, false)
	if err != nil {
		var list Errors
		if !asErrors(err, &list) {
			r.At(pn, "plan %s: %v", path, err)
			return file, nil
		}
		r.List = append(r.List, list...)
	}
	checkCallee(r, callee)
	return file, callee
}

// checkCallee refuses what a called plan may not hold: a callee runs in
// its caller's run, whose environment, secrets, limits and board
// options hold for every step; the callee's own would be silently
// ignored.
func checkCallee(r *Reporter, callee *Plan) {
	cr := &Reporter{File: callee.Path}
	for _, k := range callee.runOnly {
		cr.At(k, "%s: a called plan runs under its caller's %s; set it on the plan that is run", k.Value, k.Value)
	}
	r.List = append(r.List, cr.List...)
}

func (p *Plan) varNames() []string {
	out := make([]string, len(p.Vars))
	for i, v := range p.Vars {
		out[i] = v.Name
	}
	return out
}

func parseOutputs(r *Reporter, n *yaml.Node) []Output {
	var out []Output
	for _, f := range Fields(r, n, "outputs") {
		if !ValidIdent(f.Key) {
			r.At(f.KeyN, "output name %q must be letters, digits and _", f.Key)
			continue
		}
		if e := expr(r, f.Value, "outputs."+f.Key); e != nil {
			out = append(out, Output{Name: f.Key, Expr: e})
		}
	}
	return out
}

func asErrors(err error, list *Errors) bool {
	l, ok := err.(Errors)
	if ok {
		*list = l
	}
	return ok
}

// Calls lists the plan's call steps, at any depth.
func (p *Plan) Calls() []*Step {
	var out []*Step
	for _, s := range p.AllSteps() {
		if s.Call != nil {
			out = append(out, s)
		}
	}
	return out
}

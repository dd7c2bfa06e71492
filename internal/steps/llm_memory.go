package steps

import (
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
)

// memoryOf checks where an llm step of an agent with memory:
// conversation stands and returns the memory's bound (0: no memory).
//
// A conversation is one visit after another: each visit's request starts
// with the turns of the visits that ended before it. Steps that run at
// the same time (children of a parallel group, items of a for_each) would
// make that order a matter of timing, which a replay or Temporal could
// not repeat; so a memory agent is refused there at validate time, unless
// max_concurrency: 1 makes the group or the for_each one visit at a time,
// in plan (or item) order. (A called plan's steps are checked at run
// time: agents.Session.Remember refuses a second visit of a memory agent
// while one runs.)
func memoryOf(d *engine.Decoder, a *plans.Agent) int {
	if !a.Memory.On() {
		return 0
	}
	for st := d.Step; st != nil; st = st.Parent {
		where := ""
		switch {
		case st.ForEach != nil && st.MaxConcurrency != 1:
			where = "for_each " + st.Label
		case st.Parent != nil && len(st.Parent.Parallel) > 0 && st.Parent.MaxConcurrency != 1:
			where = "parallel group " + st.Parent.Label
		}
		if where != "" {
			at := d.Node("agent")
			if at == nil {
				at = d.Step.Node
			}
			d.Errorf(at, "agent %s has memory: conversation, and this step runs in %s, whose visits run at the same time: "+
				"a conversation takes one visit at a time, in an order a replay can repeat; set max_concurrency: 1 on %s, "+
				"or use an agent without memory here", a.Name, where, where)
			return a.Memory.MaxTokens
		}
	}
	return a.Memory.MaxTokens
}

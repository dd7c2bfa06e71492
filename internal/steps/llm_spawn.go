package steps

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"gopkg.in/yaml.v3"
)

// defaultSpawnLimits bound tools: [spawn] when the step says nothing.
var defaultSpawnLimits = agents.SpawnLimits{PerCall: 4, PerRun: 16, Depth: 2}

// llmTypeName is the llm type's name, which a sub-agent's visit carries
// too: its record is an agent's answer, shown as an llm step's is.
const llmTypeName = "llm"

// defaultSpawnConcurrency is how many sub-agents of one turn run at once.
const defaultSpawnConcurrency = 4

const spawnSchema = `{"type": "object", "additionalProperties": false, "properties": {
	"per_call": {"type": "integer", "minimum": 1, "description": "spawn_agent calls started per model turn (default 4).", "examples": [2]},
	"per_run": {"type": "integer", "minimum": 1, "description": "Sub-agents started in the whole run (default 16).", "examples": [6]},
	"depth": {"type": "integer", "minimum": 1, "description": "1: only the step's agent spawns; 2: its sub-agents may too (default 2).", "examples": [1]},
	"concurrency": {"type": "integer", "minimum": 1, "description": "Sub-agents of one turn running at once (default 4).", "examples": [2]}}}`

// decodeSpawn reads the spawn limits and checks that the step's agent
// has agents to spawn.
func decodeSpawn(d *engine.Decoder, s *llmStep) {
	n := d.Node("spawn")
	s.spawnConc = defaultSpawnConcurrency
	if n != nil {
		if s.spawn == nil {
			d.Errorf(n, "spawn is for tools: [spawn]")
			return
		}
		m := plans.Resolve(n)
		if m.Kind != yaml.MappingNode {
			d.Errorf(n, "spawn must be a mapping of limits (per_call, per_run, depth, concurrency)")
			return
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i].Value, plans.Resolve(m.Content[i+1])
			var x int
			if err := v.Decode(&x); err != nil || x < 1 {
				d.Errorf(v, "spawn.%s must be a whole number, 1 or more", k)
				continue
			}
			switch k {
			case "per_call":
				s.spawn.PerCall = x
			case "per_run":
				s.spawn.PerRun = x
			case "depth":
				s.spawn.Depth = x
			case "concurrency":
				s.spawnConc = x
			default:
				d.Errorf(m.Content[i], "spawn: unknown limit %q (per_call, per_run, depth, concurrency)", k)
			}
		}
	}
	if s.spawn == nil {
		return
	}
	if a := d.Plan.Agent(s.agent); a != nil && len(a.Spawns) == 0 {
		d.Errorf(d.Node("tools"), "tools: [spawn]: agent %s has no spawns (the agents it may start, in agents.%s.spawns)", s.agent, s.agent)
	}
}

// spawnAll starts the sub-agents the turn's spawn_agent calls ask for,
// at most concurrency at once, and gives each call's answer at its index
// (nil for the turn's other calls). A sub-agent that fails, or is
// refused, is an answer the spawning agent reads; a stopped step stops
// them all.
func (s *llmStep) spawnAll(ctx context.Context, sc *engine.StepContext, ss *agents.Session, calls []agents.ToolCall) []*agents.Message {
	out := make([]*agents.Message, len(calls))
	if s.spawn == nil {
		return out
	}
	var idx []int
	var asks []agents.ToolCall
	for i, tc := range calls {
		if tc.Name == agents.SpawnTool.Name {
			idx, asks = append(idx, i), append(asks, tc)
		}
	}
	if len(asks) == 0 {
		return out
	}
	limit := max(s.spawnConc, 1)
	reqs := ss.PlanSpawns(asks, *s.spawn, s.depth)
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	stats := make([]agents.Stats, len(reqs))
	children := make([]*engine.Child, len(reqs))
	for j, r := range reqs {
		var child *engine.Child
		if r.Refusal == "" {
			// Started in the calls' order, so a refusal past
			// limits.max_steps falls on the same calls in a replay.
			var err error
			if child, err = sc.StartChild(r.Label, r.Parent, llmTypeName, r.Agent); err != nil {
				r.Refusal = err.Error()
			}
		}
		if r.Refusal != "" {
			m := agents.SpawnAnswer(r, nil, nil, nil)
			out[idx[j]] = &m
			continue
		}
		children[j] = child
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			m, st := s.runSpawn(ctx, sc, ss, r, child)
			out[idx[j]], stats[j] = &m, st
		}()
	}
	wg.Wait()
	for _, c := range children {
		// Saved in the calls' order, not as they ended: a replay's board
		// holds them in the same order. One that cannot be saved is
		// logged: the step's own record is where a board that cannot save
		// ends the run.
		if c != nil {
			if err := c.Save(); err != nil {
				sc.Log.Error().Err(err).Str("spawn", c.Label()).Msg("recording the sub-agent's visit")
			}
		}
	}
	for _, st := range stats {
		ss.AddStats(st)
	}
	return out
}

// runSpawn runs one sub-agent to its final answer, as child visit v of
// the step: its record holds its answer, calls and usage (its own
// sub-agents' included, as the step's holds its).
func (s *llmStep) runSpawn(ctx context.Context, sc *engine.StepContext, ss *agents.Session, r agents.SpawnRequest, v *engine.Child) (agents.Message, agents.Stats) {
	cs, err := ss.SpawnSession(r)
	if err != nil {
		s.finishSpawn(ctx, sc, v, engine.Result{}, err)
		return agents.SpawnAnswer(r, nil, nil, err), agents.Stats{}
	}
	defer cs.Close()
	cs.Log = ss.Log.With().Str("spawn", r.Label).Logger()
	child := &llmStep{agent: r.Agent, output: "text", board: true, maxToolCalls: s.maxToolCalls, depth: s.depth + 1, spawnConc: s.spawnConc}
	if a := cs.Agent(); s.depth+1 < s.spawn.Depth && len(a.Spec.Spawns) > 0 {
		child.spawn = s.spawn
	}
	cs.Tools = agents.BoardTools
	if child.spawn != nil {
		cs.Tools = append(slices.Clone(cs.Tools), agents.SpawnTool)
	}
	prompt := r.Task + "\n\n" + scopeText(r)
	out, err := child.converse(ctx, sc, cs, prompt, nil)
	st := cs.Stats()
	sc.Log.Info().Str("spawn", r.Label).Str("agent", r.Agent).Bool("ok", err == nil).Msg("sub-agent answered")
	res := engine.Result{Output: out, Fields: LLMResult{Usage: usageOf(st), Agent: cmp.Or(st.Agent, r.Agent), Model: st.Model,
		FinishReason: st.FinishReason, Calls: st.Calls, Retries: st.Retries}}
	s.finishSpawn(ctx, sc, v, res, err)
	return agents.SpawnAnswer(r, cs, out, err), st
}

// finishSpawn ends a sub-agent's visit (spawnAll saves it).
func (s *llmStep) finishSpawn(ctx context.Context, sc *engine.StepContext, v *engine.Child, res engine.Result, err error) {
	if ferr := v.Finish(res, err, ctx.Err() != nil); ferr != nil {
		sc.Log.Error().Err(ferr).Str("spawn", v.Label()).Msg("recording the sub-agent's visit")
	}
}

// scopeText tells a sub-agent which keys it was given.
func scopeText(r agents.SpawnRequest) string {
	list := func(p []string) string {
		if len(p) == 0 {
			return "none"
		}
		return strings.Join(p, ", ")
	}
	return fmt.Sprintf("You are sub-agent %s, started by %s. Blackboard keys you may read: %s. Keys you may write: %s.",
		r.Label, r.ParentName, list(r.Read), list(r.Write))
}

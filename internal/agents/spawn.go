package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Sub-agents started at run time (seed 003's spawn_agent): the step's
// agent names an agent it may spawn (its spawns list), a task, and the
// board keys the sub-agent may read and write. The sub-agent runs as a
// session of its own under a label of its own (STEP/spawn-N-AGENT), so
// its model calls are recorded and replayed like any step's, and its
// board tools are bounded by the keys it was given: a write outside them
// is refused, and the refusal is an answer it reads.

// SpawnTool is the tool `tools: [spawn]` offers.
var SpawnTool = Tool{
	Name: "spawn_agent",
	Description: "Start a sub-agent on a task. It works on the shared blackboard, reading only read_keys and writing only write_keys " +
		"(key patterns such as \"research:*\"), and answers when done: the result is its final answer and the keys it wrote. " +
		"Several spawn_agent calls in one turn run at the same time. agent must be one of the agents you may spawn.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"agent":{"type":"string","description":"the agent to start"},` +
		`"task":{"type":"string","description":"what it should do"},` +
		`"read_keys":{"type":"array","items":{"type":"string"},"description":"board key patterns it may read"},` +
		`"write_keys":{"type":"array","items":{"type":"string"},"description":"board key patterns it may write"}},` +
		`"required":["agent","task"],"additionalProperties":false}`),
}

// Scope bounds the board keys a spawned agent's tools may touch
// (path.Match patterns): none given, none allowed.
type Scope struct {
	Read, Write []string
}

// SpawnLimits bound an agent's spawning.
type SpawnLimits struct {
	PerCall int // spawn_agent calls answered in one model turn
	PerRun  int // sub-agents started in the whole run
	Depth   int // sub-agents of sub-agents: 1 lets only the step's agent spawn
}

// SpawnRequest is one spawn_agent call, checked.
type SpawnRequest struct {
	Call       ToolCall
	Agent      string
	Task       string
	Read       []string
	Write      []string
	Label      string // the sub-agent's label: STEP/spawn-N-AGENT
	Parent     string // the spawning session's label: its visit's parent
	Refusal    string // why it is not started ("": it is)
	ParentName string
}

// PlanSpawns checks the spawn_agent calls of one model turn and numbers
// them: each is started, or refused with an answer the model sees (an
// agent it may not spawn, past a limit). depth is the calling session's
// (0: the step's own agent).
func (ss *Session) PlanSpawns(calls []ToolCall, lim SpawnLimits, depth int) []SpawnRequest {
	out := make([]SpawnRequest, 0, len(calls))
	started := 0
	for _, tc := range calls {
		r := SpawnRequest{Call: tc, ParentName: ss.agent.Name, Parent: ss.label}
		args, ok := argsObject(tc.Args)
		if !ok {
			r.Refusal = "the arguments of spawn_agent must be a JSON object"
			out = append(out, r)
			continue
		}
		r.Agent, _ = args["agent"].(string)
		r.Task, _ = args["task"].(string)
		r.Read, r.Write = stringsArg(args["read_keys"]), stringsArg(args["write_keys"])
		allowed := ss.agent.Spec.Spawns
		switch {
		case strings.TrimSpace(r.Task) == "":
			r.Refusal = "spawn_agent needs a task"
		case !slices.Contains(allowed, r.Agent):
			r.Refusal = fmt.Sprintf("agent %s may not spawn %q (it may spawn: %s)", ss.agent.Name, r.Agent, strings.Join(allowed, ", "))
		case depth+1 > lim.Depth:
			r.Refusal = fmt.Sprintf("spawn depth %d reached: a sub-agent this deep may not spawn others", lim.Depth)
		case started >= lim.PerCall:
			r.Refusal = fmt.Sprintf("at most %d spawn_agent calls are started per turn; ask again after these answer", lim.PerCall)
		default:
			n, ok := ss.set.takeSpawn(lim.PerRun)
			if !ok {
				r.Refusal = fmt.Sprintf("the run has started its %d sub-agents (the most it may); answer with what you have", lim.PerRun)
				break
			}
			started++
			r.Label = fmt.Sprintf("%s%s%d-%s", ss.label, spawnMark, n, r.Agent)
		}
		out = append(out, r)
	}
	return out
}

func stringsArg(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		if s, ok := x.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// takeSpawn numbers the run's next sub-agent, if the run may start one.
// Numbers follow the order the turns are answered in, which a replay
// keeps, so a sub-agent's label (and its recordings) are the same.
func (s *Set) takeSpawn(perRun int) (int, bool) {
	s.spawnMu.Lock()
	defer s.spawnMu.Unlock()
	if s.spawned >= perRun {
		return 0, false
	}
	s.spawned++
	return s.spawned, true
}

// spawnNumber is N of a sub-agent's label (STEP/spawn-N-AGENT, its own
// sub-agents' labels below it), 0 for another label: a resumed run goes
// on numbering after the sub-agents its earlier part started, so no
// label is taken twice and spawn.per_run counts them all.
func spawnNumber(label string) int {
	i := strings.LastIndex(label, spawnMark)
	if i < 0 {
		return 0
	}
	digits, _, ok := strings.Cut(label[i+len(spawnMark):], "-")
	n, err := strconv.Atoi(digits)
	if !ok || err != nil {
		return 0
	}
	return n
}

const spawnMark = "/spawn-"

// SpawnSession starts the session of a sub-agent r asks for, bounded by
// its keys. It reads the board directly, not through the visit's
// recorded reads: sub-agents run at the same time, and the order their
// reads came in is not one a replay could keep.
func (ss *Session) SpawnSession(r SpawnRequest) (*Session, error) {
	child, err := ss.set.Session(ss.board, r.Label, ss.visit, r.Agent)
	if err != nil {
		return nil, err
	}
	child.Scope = &Scope{Read: r.Read, Write: r.Write}
	child.Dir = ss.Dir
	return child, nil
}

// SpawnAnswer is the tool turn that answers a spawn_agent call: the
// sub-agent's final answer and the keys it wrote with their values, or
// why it was not started or failed.
func SpawnAnswer(r SpawnRequest, child *Session, answer any, err error) Message {
	m := Message{Role: RoleTool, ToolCallID: r.Call.ID, Name: r.Call.Name}
	if r.Refusal != "" {
		m.Content, m.IsError = "error: "+r.Refusal, true
		return m
	}
	out := map[string]any{"agent": r.Agent, "label": r.Label}
	if child != nil {
		wrote := map[string]any{}
		for _, k := range child.Wrote() {
			if e, ok := child.board.GetAt(k, child.now); ok {
				wrote[k] = e.Content
			} else {
				wrote[k] = nil
			}
		}
		out["wrote"] = wrote
	}
	if err != nil {
		out["error"] = err.Error()
		m.IsError = true
	} else {
		out["answer"] = answer
	}
	b, jerr := json.Marshal(out)
	if jerr != nil {
		m.Content, m.IsError = "error: "+jerr.Error(), true
		return m
	}
	m.Content = string(b)
	clipToolText(&m)
	return m
}

// AddStats counts a sub-agent's calls, tokens and cost in the spawning
// session's (its step's result).
func (ss *Session) AddStats(st Stats) {
	ss.statsMu.Lock()
	defer ss.statsMu.Unlock()
	ss.stats.Calls += st.Calls
	ss.stats.Retries += st.Retries
	ss.stats.Usage = ss.stats.Usage.Add(st.Usage)
	ss.stats.CostUSD += st.CostUSD
}

// Wrote lists the keys the session's board tools wrote, in order.
func (ss *Session) Wrote() []string {
	ss.statsMu.Lock()
	defer ss.statsMu.Unlock()
	return slices.Clone(ss.wrote)
}

func (ss *Session) noteWrite(key string) {
	ss.statsMu.Lock()
	defer ss.statsMu.Unlock()
	if !slices.Contains(ss.wrote, key) {
		ss.wrote = append(ss.wrote, key)
	}
}

// inScope refuses a key outside a spawned agent's keys.
func (ss *Session) inScope(op, key string) error {
	if ss.Scope == nil {
		return nil
	}
	pats := ss.Scope.Read
	if op == "write" {
		pats = ss.Scope.Write
	}
	if len(pats) == 0 {
		return fmt.Errorf("sub-agent %s was given no keys to %s; key %q is outside its scope", ss.agent.Name, op, key)
	}
	if err := allowed(ss.agent.Name, op, key, pats); err != nil {
		return errors.New(strings.Replace(err.Error(), "(board."+op+" allows", "(its spawn allows", 1))
	}
	return nil
}

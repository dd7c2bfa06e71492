package plans

import (
	"path"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Tools the plan defines: the plan's top-level `tools:`
// maps a tool name to a command template the model may call with typed
// arguments. They are defined once for the plan, beside its agents, and
// an agent's `tools:` patterns stay the one allow-list: a pattern with a
// dot names MCP tools (SERVER.TOOL), one without names the plan's tools.
// So a tool is written once and offered to the agents that name it,
// exactly as an MCP server's tools are.

// A tool may instead run a sub-plan (`plan: FILE`): the file is loaded
// and checked as a `type: plan` step's callee, its typed vars are the
// tool's parameters (those without a default required) and its declared
// outputs the result the model gets.

// Tool is a tool the plan defines.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the tool's arguments as written
	// (nil: the tool takes none). The engine compiles it.
	Parameters *yaml.Node
	// Timeout bounds one call (DefaultToolTimeout when not given); the
	// step's own timeout bounds it too.
	Timeout time.Duration
	// Command holds the tool's command fields (run, dir, env, max_output,
	// sandbox) as a mapping: the engine decodes it as a command step's,
	// so a tool's script obeys every rule a command step's does.
	Command *yaml.Node
	// Call is set for a tool that runs a sub-plan (`plan:`): the callee,
	// loaded and checked as a `type: plan` step's is (cycles refused). Its
	// vars are the tool's parameters, its declared outputs the result.
	Call    *ToolPlan
	Node    *yaml.Node
	KeyNode *yaml.Node
}

// ToolPlan is a sub-plan tool's callee.
type ToolPlan struct {
	Path string     // as written in `plan:`
	File string     // resolved: relative to the caller's directory
	Plan *Plan      // the callee (nil when it could not be read)
	Node *yaml.Node // the `plan:` value
}

// DefaultToolTimeout bounds one call of a plan tool that sets no timeout:
// a model waits for the answer, and a hung script must not hold the step
// until its own timeout.
const DefaultToolTimeout = time.Minute

// toolOwnFields are a tool's fields beside its command's.
var toolOwnFields = []string{"description", "parameters", "timeout", "plan"}

// ToolCommandFields are the command fields a tool may have; the engine
// decodes them as a command step's.
var ToolCommandFields = []string{"run", "dir", "env", "max_output", "sandbox"}

// reservedToolNames are the built-in tools' names: a plan tool may not take
// one.
var reservedToolNames = []string{"board_read", "board_write", "board_lock", "board_unlock", "board_list", "board_topic",
	"spawn_agent", "memory_write", "memory_read", "memory_list"}

func parseTools(r *Reporter, n *yaml.Node) []*Tool {
	var out []*Tool
	for _, f := range Fields(r, n, "tools") {
		what := "tools." + f.Key
		t := &Tool{Name: f.Key, Node: Resolve(f.Value), KeyNode: f.KeyN}
		switch {
		case !ValidIdent(f.Key) || len(f.Key) > 64:
			r.At(f.KeyN, "tool name %q must be letters, digits and _ (at most 64; the model calls the tool by it)", f.Key)
		case strings.Contains(f.Key, "__"):
			r.At(f.KeyN, "tool name %q may not hold __, which marks MCP tools (SERVER__TOOL) for the model", f.Key)
		case contains(reservedToolNames, f.Key):
			r.At(f.KeyN, "tool name %q is a board tool's (tools: [board] on an llm step offers it); choose another", f.Key)
		}
		cmd := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: t.nodeLine(), Column: t.nodeColumn()}
		hasRun := false
		var planN, paramsN *yaml.Node
		for _, g := range Fields(r, f.Value, what) {
			switch g.Key {
			case "description":
				t.Description, _ = String(r, g.Value, what+".description")
			case "parameters":
				t.Parameters = Resolve(g.Value)
				paramsN = g.KeyN
			case "timeout":
				if d, ok := Duration(r, g.Value, what+".timeout"); ok {
					if d == 0 {
						r.At(g.Value, "%s.timeout must be more than 0", what)
					}
					t.Timeout = d
				}
			case "run", "dir", "env", "max_output", "sandbox":
				hasRun = hasRun || g.Key == "run"
				cmd.Content = append(cmd.Content, g.KeyN, g.Value)
			case "plan":
				planN = g.Value
			default:
				Unknown(r, g, what, append(append([]string(nil), toolOwnFields...), ToolCommandFields...))
			}
		}
		if t.Node == nil || t.Node.Kind != yaml.MappingNode {
			continue
		}
		if strings.TrimSpace(t.Description) == "" {
			r.At(t.Node, "%s is missing required field \"description\" (the model reads it to know what the tool does)", what)
		}
		if planN != nil {
			if len(cmd.Content) > 0 {
				r.At(cmd.Content[0], "%s: %s: a tool runs either a plan: or a run: command, not both", what, cmd.Content[0].Value)
				out = append(out, t) // still a tool the agents may name
				continue
			}
			if paramsN != nil {
				r.At(paramsN, "%s: a plan tool's parameters are the called plan's vars; remove parameters:", what)
				out = append(out, t)
				continue
			}
			if path, ok := String(r, planN, what+".plan"); ok {
				if strings.TrimSpace(path) == "" {
					r.At(planN, "%s.plan is empty; it names the plan file the tool runs, relative to this one", what)
					continue
				}
				// Loaded once the whole plan is read (loadToolPlans):
				// the callee's agents join the plan's.
				t.Call = &ToolPlan{Path: path, Node: Resolve(planN)}
				if t.Timeout == 0 {
					t.Timeout = DefaultToolTimeout
				}
				out = append(out, t)
			}
			continue
		}
		if !hasRun {
			r.At(t.Node, "%s is missing required field \"run\" (the shell script the tool runs; ${{ args.NAME }} gives it an argument as data)", what)
			continue
		}
		if t.Timeout == 0 {
			t.Timeout = DefaultToolTimeout
		}
		t.Command = cmd
		out = append(out, t)
	}
	return out
}

// loadToolPlans loads the callees of the plan's sub-plan tools, as a
// `type: plan` step's are loaded. A tool whose callee could not be read
// is reported and stays (Call.Plan nil), so the agents naming it are not
// told it does not exist.
func loadToolPlans(r *Reporter, p *Plan) {
	for _, t := range p.Tools {
		if c := t.Call; c != nil {
			c.File, c.Plan = loadCallee(r, p, c.Node, c.Path)
			if c.Plan != nil {
				joinCalleeAgents(p, c.Plan, c.File, nil, t.AgentName)
			}
		}
	}
}

// AgentName is the run-wide name of agent name of a sub-plan tool's
// callee: tools/TOOL/NAME, a name neither a plan's agent nor a call
// step's callee agent (LABEL/NAME) can take.
func (t *Tool) AgentName(name string) string { return "tools/" + t.Name + "/" + name }

func (t *Tool) nodeLine() int {
	if t.Node == nil {
		return 0
	}
	return t.Node.Line
}

func (t *Tool) nodeColumn() int {
	if t.Node == nil {
		return 0
	}
	return t.Node.Column
}

// Tool returns the plan's tool named name, or nil.
func (p *Plan) Tool(name string) *Tool {
	for _, t := range p.Tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// ToolNames lists the plan's tools' names, sorted.
func (p *Plan) ToolNames() []string {
	out := make([]string, len(p.Tools))
	for i, t := range p.Tools {
		out[i] = t.Name
	}
	sort.Strings(out)
	return out
}

// PlanToolPattern reports whether an agent's tools pattern names the
// plan's tools (no dot) rather than MCP tools (SERVER.TOOL).
func PlanToolPattern(p string) bool { return !strings.Contains(p, ".") && p != "board" }

// PlanToolAllowed reports whether the plan tool name matches one of an
// agent's patterns for plan tools.
func PlanToolAllowed(patterns []string, name string) bool {
	for _, p := range patterns {
		if !PlanToolPattern(p) {
			continue
		}
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// checkPlanToolPattern checks an agent's pattern for plan tools: a name
// must be one of the plan's tools, a pattern must match one.
func checkPlanToolPattern(r *Reporter, p *Plan, a *Agent, pat string) {
	what := "agent " + a.Name
	at := a.ToolsNode
	if at != nil && at.Kind == yaml.SequenceNode {
		for _, item := range at.Content {
			if item.Value == pat {
				at = item // the pattern itself, not the list
				break
			}
		}
	}
	if pat == "board" {
		r.At(at, "%s: tools: board is not an agent's tool: give it on the llm step (tools: [board])", what)
		return
	}
	if _, err := path.Match(pat, ""); err != nil {
		r.At(at, "%s: tools: %q is not a valid pattern: %v", what, pat, err)
		return
	}
	names := p.ToolNames()
	for _, n := range names {
		if ok, _ := path.Match(pat, n); ok {
			return
		}
	}
	if len(names) == 0 {
		r.At(at, "%s: tools: %q names no tool: the plan defines no tools (a top-level tools: map), and an MCP tool is named SERVER.TOOL", what, pat)
		return
	}
	r.At(at, "%s: tools: %q names none of the plan's tools (%s)%s; an MCP tool is named SERVER.TOOL", what, pat, strings.Join(names, ", "), Suggest(pat, names))
}

package agents

import (
	"context"
	"fmt"

	"github.com/planrunner/runner/internal/agents/mcp"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/schemacheck"
)

// Tools the plan defines (internal/plans/tools.go) reach a session as PlanTools:
// what the model sees, and how the step runs a call. The session does
// what it does for an MCP tool: it checks the arguments against the
// schema before anything runs, and records each call and its result (kind
// tool, numbered with the visit's MCP exchanges), so a replay runs no
// command and a --reuse --offline run takes the results back.

// KindTool is the Kind of the recordings of calls of tools the plan
// defines.
const KindTool = "tool"

// PlanTool is a tool the plan defines, as a step offers it.
type PlanTool struct {
	Tool
	// Kind says what the tool runs ("command"), recorded with each call.
	Kind string
	// Run performs a call whose arguments match Parameters. text is what
	// the model sees; failed marks a failure the model sees (a non-zero
	// exit, the tool's timeout); err is an error of the step (a
	// cancelled step, a script that could not start).
	Run func(ctx context.Context, args map[string]any) (text string, failed bool, err error)
}

type planTool struct {
	PlanTool
	schema *schemacheck.Schema
}

// AddPlanTools makes the plan's tools the agent names callable through
// RunPlanTool, and gives them as the model will see them.
func (ss *Session) AddPlanTools(ts []PlanTool) ([]Tool, error) {
	var out []Tool
	for _, t := range ts {
		if _, dup := ss.mcpTools[t.Name]; dup {
			return nil, fmt.Errorf("agent %s: the plan's tool %s and an MCP tool have the same name for the model", ss.agent.Name, t.Name)
		}
		sch, err := schemacheck.Compile("tool.json", t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("agent %s: tool %s: its parameters are not a usable JSON Schema: %v", ss.agent.Name, t.Name, err)
		}
		if ss.planTools == nil {
			ss.planTools = map[string]*planTool{}
		}
		ss.planTools[t.Name] = &planTool{PlanTool: t, schema: sch}
		out = append(out, t.Tool)
	}
	return out, nil
}

// PlanToolsAllowed filters names (the plan's tools) down to those the
// agent's tools patterns allow.
func (ss *Session) PlanToolsAllowed(names []string) []string {
	var out []string
	if ss.agent.Spec == nil {
		return nil
	}
	for _, n := range names {
		if plans.PlanToolAllowed(ss.agent.Spec.Tools, n) {
			out = append(out, n)
		}
	}
	return out
}

// IsPlanTool reports whether name is one of the session's plan tools.
func (ss *Session) IsPlanTool(name string) bool {
	_, ok := ss.planTools[name]
	return ok
}

// RunPlanTool performs a call of the model to a tool the plan defines
// and returns the tool turn that answers it. As for an MCP tool,
// arguments that do not match the schema and the tool's own failure are
// answers the model sees; a replay that diverged or a cancelled step are
// errors of the step.
func (ss *Session) RunPlanTool(ctx context.Context, tc ToolCall) (Message, error) {
	m := Message{Role: RoleTool, ToolCallID: tc.ID, Name: tc.Name}
	t := ss.planTools[tc.Name]
	if t == nil {
		m.Content, m.IsError = fmt.Sprintf("error: unknown tool %q", tc.Name), true
		return m, nil
	}
	obj, canonArgs, ok, err := toolArgs(&m, tc, t.schema, "nothing was run")
	if !ok || err != nil {
		return m, err
	}
	var resp mcpResponse
	err = ss.mcpExchange(ctx, mcpRequest{Op: t.Kind, Tool: t.Name, Args: canonArgs}, &resp, func(*mcp.Conn) error {
		text, failed, err := t.Run(ctx, obj)
		if err != nil {
			return err
		}
		resp.Result = &mcp.Result{Text: text, IsError: failed}
		return nil
	}, nil)
	if err != nil {
		return m, err
	}
	if resp.Result != nil {
		m.Content, m.IsError = resp.Result.Text, resp.Result.IsError
	}
	clipToolText(&m)
	return m, nil
}

package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
)

// offerPlanTools hands the session the tools the plan defines that the
// step's agent names (its tools patterns without a dot), each run as the
// plan's command (engine.StepContext.RunPlanTool) when the model calls it.
func offerPlanTools(ctx context.Context, sc *engine.StepContext, ss *agents.Session) ([]agents.Tool, error) {
	byName := map[string]*engine.PlanTool{}
	var names []string
	for _, t := range sc.PlanTools() {
		byName[t.Name] = t
		names = append(names, t.Name)
	}
	var offer []agents.PlanTool
	for _, name := range ss.PlanToolsAllowed(names) {
		t := byName[name]
		kind, run := "command", runCommandTool
		if t.IsPlan() {
			kind, run = "plan", runPlanTool
		}
		offer = append(offer, agents.PlanTool{
			Tool: agents.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters},
			Kind: kind,
			Run: func(_ context.Context, args map[string]any) (string, bool, error) {
				return run(ctx, sc, t, args)
			},
		})
	}
	return ss.AddPlanTools(offer)
}

// runCommandTool runs one call of a command tool. What the model sees:
// the script's standard output; for a non-zero exit, the exit status,
// the output and the end of its standard error, as a failure (the step
// goes on: the model decides what to do about it); for the tool's
// timeout, that it timed out. A step that is itself stopped, or a tool
// that could not start (its sandbox unavailable, its dir missing), is an
// error of the step.
func runCommandTool(ctx context.Context, sc *engine.StepContext, t *engine.PlanTool, args map[string]any) (string, bool, error) {
	res, err := sc.RunPlanTool(ctx, t, args)
	if ctx.Err() != nil {
		return "", false, context.Cause(ctx)
	}
	cr, ran := res.Fields.(CommandResult)
	switch {
	case err == nil:
		if strings.TrimSpace(cr.Stdout) == "" {
			return "(no output; exit status 0)", false, nil
		}
		return cr.Stdout, false, nil
	case ran && cr.TimedOut, errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("error: %s timed out after %s and was stopped%s", t.Name, t.Timeout, section("output so far", cr.Stdout, 0)), true, nil
	case ran && cr.Signal != "":
		return fmt.Sprintf("killed by signal %s%s%s", cr.Signal, section("stdout", cr.Stdout, 0), section("stderr", cr.Stderr, 20)), true, nil
	case ran && cr.ExitCode != 0:
		return fmt.Sprintf("exit status %d%s%s", cr.ExitCode, section("stdout", cr.Stdout, 0), section("stderr", cr.Stderr, 20)), true, nil
	case strings.HasPrefix(err.Error(), "run: "):
		// The arguments do not fit where the script puts them (text
		// where it needs a whole number): the model can fix that.
		return "error: " + err.Error() + "; nothing was run", true, nil
	}
	return "", false, fmt.Errorf("tool %s: %w", t.Name, err)
}

// runPlanTool runs one call of a sub-plan tool. What the model sees:
// {"status": "succeeded", "outputs": {...}} (the callee's declared
// outputs), or, when the callee failed or timed out, {"status":
// "failed", "error": ...} as a failure (the step goes on: the model
// decides what to do about it). A step that is itself stopped is an
// error of the step.
func runPlanTool(ctx context.Context, sc *engine.StepContext, t *engine.PlanTool, args map[string]any) (string, bool, error) {
	res, err := sc.RunPlanTool(ctx, t, args)
	if ctx.Err() != nil {
		return "", false, context.Cause(ctx)
	}
	answer := map[string]any{"status": engine.StatusSucceeded}
	if err != nil {
		msg := err.Error()
		if errors.Is(err, context.DeadlineExceeded) {
			msg = fmt.Sprintf("%s timed out after %s and was stopped: %s", t.Name, t.Timeout, msg)
		}
		answer = map[string]any{"status": engine.StatusFailed, "error": msg}
	} else if pr, ok := res.Fields.(*engine.PlanResult); ok {
		answer["outputs"] = pr.Outputs
	}
	text, jerr := json.Marshal(answer)
	if jerr != nil {
		return "", false, fmt.Errorf("tool %s: its result cannot be given as JSON: %w", t.Name, jerr)
	}
	return string(text), err != nil, nil
}

// section is a stream of a failed tool's for the model: under its name,
// its last lines only when lines > 0; nothing when it is empty.
func section(name, text string, lines int) string {
	text = strings.TrimRight(text, "\n")
	if strings.TrimSpace(text) == "" {
		return ""
	}
	if l := strings.Split(text, "\n"); lines > 0 && len(l) > lines {
		text = strings.Join(l[len(l)-lines:], "\n")
		name += fmt.Sprintf(" (last %d lines)", lines)
	}
	return "\n" + name + ":\n" + text
}

// describeTools splits an agent's tools patterns for the dry run: its MCP
// patterns as written, and the plan's tools they name (a sub-plan tool
// with its file).
func describeTools(p *plans.Plan, a *plans.Agent) (mcp, own []string) {
	for _, pat := range a.Tools {
		if !plans.PlanToolPattern(pat) {
			mcp = append(mcp, pat)
		}
	}
	for _, n := range p.ToolNames() {
		if plans.PlanToolAllowed(a.Tools, n) {
			if t := p.Tool(n); t != nil && t.Call != nil {
				n += " (plan " + t.Call.Path + ")" // what a call runs
			}
			own = append(own, n)
		}
	}
	return mcp, own
}

package steps

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
)

// A tool call an agent's approve patterns name waits for a person as an
// input step does: the run saves and ends waiting, `runner answer --step
// LABEL/approve-N` (or serve, or the MCP server) answers the form below,
// and the resumed visit goes through its recorded calls again up to the
// question, whose answer is then on the board (and, in a replay, in the
// recording). N counts the visit's approvals from 1.

// ApprovalForm is the form of a tool-call approval.
const ApprovalForm = `{"type":"object","properties":{` +
	`"allow":{"type":"boolean","description":"run this tool call"},` +
	`"reason":{"type":"string","description":"why; the agent sees it when the call is refused"}},` +
	`"required":["allow"]}`

// approvalMark is what follows a step's label in its approvals' labels.
const approvalMark = "/approve-"

// ApprovalLabel is the input label of approval n of step label's visit.
func ApprovalLabel(label string, n int) string { return label + approvalMark + strconv.Itoa(n) }

// IsApproval reports whether an input label is a tool-call approval of
// step label.
func IsApproval(label, input string) bool {
	rest, ok := strings.CutPrefix(input, label+approvalMark)
	if !ok {
		return false
	}
	_, err := strconv.Atoi(rest)
	return err == nil
}

// approvals asks a person about the tool calls of one llm step visit.
type approvals struct {
	sc *engine.StepContext
	ss *agents.Session
	n  int
}

// ask is the person's word on tool call tc: nil when it is allowed (the
// call runs), the tool turn the model sees when it is refused, or
// engine.ErrWaiting when nobody has answered yet.
func (ap *approvals) ask(tc agents.ToolCall) (*agents.Message, error) {
	ap.n++
	sc := ap.sc
	label := ApprovalLabel(sc.Label, ap.n)
	if a, ok := FindAnswer(sc.Board.Recordings(), label, sc.Visit); ok {
		if allow, _ := a.Answer["allow"].(bool); allow {
			return nil, nil
		}
		content := "error: a person refused this call; it was not run"
		if a.By != "" {
			content = "error: " + a.By + " refused this call; it was not run"
		}
		if reason, _ := a.Answer["reason"].(string); reason != "" {
			content += ". Their reason: " + reason
		}
		return &agents.Message{Role: agents.RoleTool, ToolCallID: tc.ID, Name: tc.Name, IsError: true, Content: content}, nil
	}
	if _, found := waitingFor(sc.Board.Run(), label, sc.Visit); found {
		return nil, engine.ErrWaiting
	}
	agent := ap.ss.Agent()
	name := ap.ss.PlanName(tc.Name)
	args := json.RawMessage(tc.Args)
	if !json.Valid(args) {
		args, _ = json.Marshal(string(tc.Args))
	}
	var shown bytes.Buffer
	if json.Indent(&shown, args, "", "  ") != nil {
		shown.Write(args)
	}
	w := board.WaitingInput{Label: label, Visit: sc.Visit, Since: sc.Now(), Form: json.RawMessage(ApprovalForm),
		Prompt: fmt.Sprintf("Agent %s (step %s) asks to call tool %s with these arguments:\n%s\nAllow this call?",
			agent.Name, VisitName(sc.Label, sc.Visit), name, shown.String()),
		Tool: &board.WaitingTool{Agent: agent.Name, Name: name, Args: args}}
	if agent.Spec != nil {
		w.Answerers = agent.Spec.ApproveAnswerers
	}
	if err := sc.Board.UpdateRun(func(r *board.Run) {
		r.Waiting = append(append([]board.WaitingInput(nil), r.Waiting...), w)
	}); err != nil {
		return nil, err
	}
	sc.Log.Info().Str("tool", name).Str("input", label).Msg("a tool call waits for a person to allow it")
	return nil, engine.ErrWaiting
}

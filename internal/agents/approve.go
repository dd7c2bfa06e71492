package agents

import (
	"path"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
)

// PlanName is how the plan names the model's tool name: SERVER.TOOL for
// an MCP tool, the tool's own name for a tool the plan defines or a board
// tool.
func (ss *Session) PlanName(model string) string {
	if t, ok := ss.mcpTools[model]; ok {
		return t.server.Name + "." + t.name
	}
	return model
}

// NeedsApproval reports whether a call of the model's tool name must be
// allowed by a person first: the agent's approve patterns (path.Match)
// match its plan name. A pattern without a dot names only tools the plan
// defines and board tools, so `*` does not take in every MCP tool.
func (ss *Session) NeedsApproval(model string) bool {
	spec := ss.agent.Spec
	if spec == nil || len(spec.Approve) == 0 {
		return false
	}
	name := ss.PlanName(model)
	_, isMCP := ss.mcpTools[model]
	for _, p := range spec.Approve {
		if isMCP && plans.PlanToolPattern(p) {
			continue
		}
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// Reenter makes the session go through the model calls and tool
// exchanges its visit already made and recorded before it stopped to ask
// a person about a tool call: each is answered from its recording, by
// number, while its request is the one recorded, neither paid nor
// recorded again, so the visit goes on where it stopped and a replay
// numbers its calls as one run. Call it before the first call.
func (ss *Session) Reenter() {
	if ss.board == nil {
		return
	}
	ss.own = map[callKey]board.Recording{}
	for _, r := range ss.board.Recordings() {
		if r.Label != ss.label || r.Visit != ss.visit {
			continue
		}
		switch r.Kind {
		case KindLLM, KindMCP, KindTool:
			k := callKey{r.Kind, r.Label, r.Visit, r.Call}
			if r.Kind == KindTool {
				k.kind = KindMCP // one numbering for both
			}
			if _, dup := ss.own[k]; !dup {
				ss.own[k] = r
			}
		}
	}
	ss.mcpNumbered = true // from the first exchange, as the first time
	ss.set.reenter(ss.board, ss.label, ss.visit)
}

// ownCall is the visit's own recorded call n of kind (KindLLM or
// KindMCP), when its request (sha256 sum) is the one recorded; it is
// taken once.
func (ss *Session) ownCall(kind string, n int, sum string) (board.Recording, bool) {
	k := callKey{kind, ss.label, ss.visit, n}
	r, ok := ss.own[k]
	if !ok {
		return board.Recording{}, false
	}
	delete(ss.own, k)
	if r.RequestSHA256 != sum {
		ss.own = nil // the visit goes another way from here: live
		return board.Recording{}, false
	}
	return r, true
}

// reenter numbers the visit's calls from the first again (Reenter).
func (s *Set) reenter(b *board.Board, label string, visit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bindLocked(b)
	s.calls[visitKey{label, visit}] = 0
}

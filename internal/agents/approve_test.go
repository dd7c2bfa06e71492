package agents

import (
	"testing"

	"github.com/planrunner/runner/internal/plans"
)

// approve patterns are written as tools patterns: SERVER.TOOL for an MCP
// tool, a name without a dot for a plan tool or a board tool, so a bare
// `*` does not take in every MCP tool.
func TestNeedsApproval(t *testing.T) {
	mcpTools := map[string]*mcpTool{
		"gh__merge_pr": {server: &plans.MCPServer{Name: "gh"}, name: "merge_pr"},
		"gh__list":     {server: &plans.MCPServer{Name: "gh"}, name: "list"},
	}
	cases := []struct {
		approve []string
		tool    string // as the model names it
		want    bool
	}{
		{nil, "deploy", false},
		{[]string{"deploy"}, "deploy", true},
		{[]string{"deploy"}, "version", false},
		{[]string{"dep*"}, "deploy", true},
		{[]string{"board_write"}, "board_write", true},
		{[]string{"gh.merge_*"}, "gh__merge_pr", true},
		{[]string{"gh.merge_*"}, "gh__list", false},
		{[]string{"gh.*"}, "gh__list", true},
		{[]string{"*"}, "gh__list", false}, // a pattern without a dot names plan tools only
		{[]string{"*"}, "deploy", true},
		{[]string{"gh__list"}, "gh__list", false}, // the model's name is not the plan's
	}
	for _, c := range cases {
		ss := &Session{agent: &Agent{Name: "a", Spec: &plans.Agent{Approve: c.approve}}, mcpTools: mcpTools}
		if got := ss.NeedsApproval(c.tool); got != c.want {
			t.Errorf("approve %v, tool %s: %v, want %v", c.approve, c.tool, got, c.want)
		}
	}
}

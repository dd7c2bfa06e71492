package plans

import "testing"

// TestToolPatternsKeepTheirKind: an agent's pattern without a dot names
// the plan's tools only, one with a dot MCP tools only, so `*` (all the
// plan's tools) does not also open every MCP server's tools.
func TestToolPatternsKeepTheirKind(t *testing.T) {
	for _, tt := range []struct {
		patterns      []string
		server, tool  string // an MCP tool
		plan          string // a plan tool
		wantMCP, want bool
	}{
		{[]string{"*"}, "fs", "write_file", "grep", false, true},
		{[]string{"fs.*"}, "fs", "write_file", "grep", true, false},
		{[]string{"gr*", "fs.read_*"}, "fs", "read_text_file", "grep", true, true},
		{[]string{"board"}, "fs", "read", "board", false, false},
	} {
		if got := ToolAllowed(tt.patterns, tt.server, tt.tool); got != tt.wantMCP {
			t.Errorf("ToolAllowed(%v, %s.%s) = %v", tt.patterns, tt.server, tt.tool, got)
		}
		if got := PlanToolAllowed(tt.patterns, tt.plan); got != tt.want {
			t.Errorf("PlanToolAllowed(%v, %s) = %v", tt.patterns, tt.plan, got)
		}
	}
}

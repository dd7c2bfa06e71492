package agents

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/plans"
)

func TestBoardTools(t *testing.T) {
	spec := scriptAgent(plans.Response{Text: "x"})
	spec.Board = plans.AgentBoard{Read: []string{"notes/*", "shared"}, Write: []string{"notes/*"}}
	h := newHarness(t, onePlan(spec), nil)
	h.board.Append(boardEntry("shared", "hello"))
	h.board.Append(boardEntry("secret", "s3"))
	ss := h.session(t, "work", "bot")

	tests := []struct {
		name, tool, args string
		want             string // substring of the tool's answer
		isErr            bool
	}{
		{"write", "board_write", `{"key":"notes/a","value":{"n":1}}`, `"version":1`, false},
		{"read back", "board_read", `{"key":"notes/a"}`, `"value":{"n":1},"version":1`, false},
		{"read absent", "board_read", `{"key":"notes/none"}`, `"found":false`, false},
		{"read a shared key", "board_read", `{"key":"shared"}`, `"value":"hello"`, false},
		{"read outside the patterns", "board_read", `{"key":"secret"}`, `agent bot may not read key "secret" (board.read allows notes/*, shared)`, true},
		{"write outside the patterns", "board_write", `{"key":"shared","value":1}`, `agent bot may not write key "shared"`, true},
		{"compare-and-set wins", "board_write", `{"key":"notes/a","value":2,"expect_version":1}`, `"version":2`, false},
		{"compare-and-set loses", "board_write", `{"key":"notes/a","value":3,"expect_version":1}`, `expected version 1, found 2`, true},
		{"create only", "board_write", `{"key":"notes/a","value":3,"expect_version":0}`, `expected version 0, found 2`, true},
		{"ttl", "board_write", `{"key":"notes/tmp","value":"t","ttl":"1ms"}`, `"version":1`, false},
		{"bad ttl", "board_write", `{"key":"notes/tmp","value":"t","ttl":"soon"}`, `ttl "soon" is not a duration`, true},
		{"list hides unreadable keys", "board_list", `{}`, `{"keys":[{"author":"bot","key":"notes/a","version":2},{"author":"runner","key":"shared","version":1}]}`, false},
		{"missing key", "board_read", `{}`, `key must be a non-empty string`, true},
		{"arguments that are not JSON", "board_read", `"{\"key\": "`, `must be a JSON object`, true},
		{"unknown tool", "shell", `{}`, `unknown tool "shell" (available: board_read, board_write, board_list, board_topic)`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "list hides unreadable keys" {
				time.Sleep(5 * time.Millisecond) // let notes/tmp expire
			}
			m := ss.RunTool(ToolCall{ID: "c1", Name: tc.tool, Args: json.RawMessage(tc.args)})
			if m.Role != RoleTool || m.ToolCallID != "c1" || m.Name != tc.tool {
				t.Errorf("tool message = %+v", m)
			}
			if m.IsError != tc.isErr || !strings.Contains(m.Content, tc.want) {
				t.Errorf("%s(%s) = %q (error %v), want %q (error %v)", tc.tool, tc.args, m.Content, m.IsError, tc.want, tc.isErr)
			}
		})
	}
	if e, _ := h.board.Get("notes/a"); e.Author != "bot" || e.Label != "work" {
		t.Errorf("written entry lacks provenance: %+v", e)
	}
}

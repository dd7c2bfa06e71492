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
		{"unknown tool", "shell", `{}`, `unknown tool "shell" (available: board_read, board_write, board_lock, board_unlock, board_list, board_topic)`, true},
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

// Leases through the board tools: the agent is the owner, so another
// agent can neither take nor release what it holds, and each refusal is
// an answer the model reads.
func TestBoardLeaseTools(t *testing.T) {
	bot := scriptAgent(plans.Response{Text: "x"})
	bot.Board = plans.AgentBoard{Write: []string{"lock:*"}}
	other := &plans.Agent{Name: "other", Provider: "script", Responses: []plans.Response{{Text: "y"}}}
	h := newHarness(t, onePlan(bot, other), nil)
	ss := map[string]*Session{"bot": h.session(t, "work", "bot"), "other": h.session(t, "work", "other")}
	tests := []struct {
		agent, tool, args string
		want              string
		isErr             bool
	}{
		{"bot", "board_lock", `{"key":"lock:db","ttl":"1m"}`, `"owner":"bot"`, false},
		{"bot", "board_lock", `{"key":"lock:db","ttl":60}`, `"version":2`, false},
		{"other", "board_lock", `{"key":"lock:db","ttl":"1m"}`, `lock "lock:db": held by bot until`, true},
		{"other", "board_unlock", `{"key":"lock:db"}`, `unlock "lock:db": held by bot`, true},
		{"bot", "board_lock", `{"key":"lock:x"}`, `board_lock needs a ttl`, true},
		{"bot", "board_lock", `{"key":"deploy","ttl":"1m"}`, `agent bot may not write key "deploy"`, true},
		{"bot", "board_unlock", `{"key":"lock:db"}`, `"released":true`, false},
		{"other", "board_lock", `{"key":"lock:db","ttl":"1m"}`, `"owner":"other"`, false},
		{"bot", "board_unlock", `{"key":"lock:db"}`, `held by other`, true},
	}
	for i, tc := range tests {
		m := ss[tc.agent].RunTool(ToolCall{ID: "c1", Name: tc.tool, Args: json.RawMessage(tc.args)})
		if m.IsError != tc.isErr || !strings.Contains(m.Content, tc.want) {
			t.Errorf("%d: %s %s(%s) = %q (error %v), want %q (error %v)", i, tc.agent, tc.tool, tc.args, m.Content, m.IsError, tc.want, tc.isErr)
		}
	}
}

package agents

import (
	"fmt"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
)

// A memory agent's conversation takes one visit at a time: a second
// visit that would start while one holds it (steps of a called plan run
// side by side, which validation cannot see) is refused, naming both;
// once the first ends, the next may start.
func TestMemoryOneVisitAtATime(t *testing.T) {
	set, err := New(onePlan(&plans.Agent{Name: "coder", Provider: "script", Responses: []plans.Response{{Text: "a"}},
		Memory: &plans.AgentMemory{Mode: plans.MemoryConversation, MaxTokens: 100}}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := board.New(board.Run{ID: "r"})
	first, _ := set.Session(b, "many[0]/ask", 1, "coder")
	second, _ := set.Session(b, "many[1]/ask", 1, "coder")
	if err := first.Remember("one"); err != nil {
		t.Fatal(err)
	}
	err = second.Remember("two")
	if err == nil || !strings.Contains(err.Error(), "agent coder has memory: conversation, and step many[1]/ask (visit 1) would use it while step many[0]/ask (visit 1) does") {
		t.Fatalf("err = %v", err)
	}
	first.Close()
	if err := second.Remember("two"); err != nil {
		t.Fatalf("after the first visit ended: %v", err)
	}
	second.Close()
}

// The memory field is read from a recorded request's end; a "memory" key
// anywhere else (a tool's arguments, a schema) is not taken for it.
func TestMemoryRefOf(t *testing.T) {
	withArgs := Request{Model: "m", Messages: []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "1", Name: "remember",
		Args: []byte(`{"memory":{"agent":"coder","messages":3}}`)}}}}}
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"memory", Request{Model: "m", Messages: []Message{user("hi")}, Memory: &MemoryRef{Agent: "coder", Messages: 0}}, "coder/0"},
		{"none", Request{Model: "m", Messages: []Message{user(`say "memory":{"agent":"coder","messages":1}}`)}}, "none"},
		{"a memory key in a tool's arguments only", withArgs, "none"},
		{"both", func() Request {
			r := withArgs
			r.Memory = &MemoryRef{Agent: "other", Messages: 1, Dropped: 2}
			return r
		}(), "other/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			canon, _, err := tt.req.Canonical()
			if err != nil {
				t.Fatal(err)
			}
			ref, err := memoryRefOf(canon)
			if err != nil {
				t.Fatal(err)
			}
			got := "none"
			if ref != nil {
				got = ref.Agent + "/" + fmt.Sprint(ref.Messages)
			}
			if got != tt.want {
				t.Errorf("memoryRefOf(%s) = %s, want %s", canon, got, tt.want)
			}
		})
	}
}

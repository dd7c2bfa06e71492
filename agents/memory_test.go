package agents

import (
	"strings"
	"testing"

	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/plans"
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

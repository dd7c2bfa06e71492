package agents

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// BenchmarkMemoryTurns reads a memory agent's turns at the start of a
// visit, after 50 or 200 earlier visits of about 1 KiB each (a prompt, a
// tool call, its result and an answer), each recorded with the memory it
// sent (bounded at 8000 tokens, as a run would).
func BenchmarkMemoryTurns(b *testing.B) {
	for _, visits := range []int{50, 200} {
		b.Run(fmt.Sprint(visits), func(b *testing.B) {
			bd := board.New(board.Run{ID: "r"})
			var memory []Message
			for v := 1; v <= visits; v++ {
				own := []Message{
					{Role: RoleUser, Content: fmt.Sprintf("Visit %d: ", v) + strings.Repeat("fix the tests ", 20)},
					{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "board_read", Args: json.RawMessage(`{"key":"k"}`)}}},
					{Role: RoleTool, ToolCallID: "c1", Name: "board_read", Content: strings.Repeat("x", 300)},
				}
				if len(memory) > 160 { // about the 8000-token bound
					memory = memory[len(memory)-160:]
				}
				req := Request{Model: "m", Messages: append(append([]Message(nil), memory...), own...), Memory: &MemoryRef{Agent: "coder", Messages: len(memory)}}
				canon, sum, err := req.Canonical()
				if err != nil {
					b.Fatal(err)
				}
				answer := strings.Repeat("an answer ", 40)
				resp, _ := json.Marshal(Response{Text: answer})
				if err := bd.AddRecording(board.Recording{Label: "work", Visit: v, Call: 1, Kind: KindLLM, Agent: "coder",
					RequestSHA256: sum, Request: canon, Response: resp}); err != nil {
					b.Fatal(err)
				}
				memory = append(append(memory, own...), Message{Role: RoleAssistant, Content: answer})
			}
			set, err := New(onePlan(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := set.memoryTurns(bd, "coder", "work", visits+1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

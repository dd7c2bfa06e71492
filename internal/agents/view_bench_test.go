package agents

import (
	"fmt"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
)

// BenchmarkView renders a bounded board view for an agent subscribed to
// one topic, over boards of growing size (half the keys on its topic).
func BenchmarkView(b *testing.B) {
	for _, n := range []int{100, 1000, 10000, 100000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			spec := &plans.Agent{Name: "bot", Provider: "script", Subscribe: []string{"sec"}}
			set, err := New(onePlan(spec), Options{})
			if err != nil {
				b.Fatal(err)
			}
			bd := board.New(board.Run{ID: "bench"})
			for i := 0; i < n; i++ {
				topic := "sec"
				if i%2 == 1 {
					topic = "perf"
				}
				if _, err := bd.Write(board.WriteOp{Key: fmt.Sprintf("k%d", i), Value: "some value of a key", Author: "runner", Topic: topic, ExpectVersion: -1}); err != nil {
					b.Fatal(err)
				}
			}
			public := []ViewEntry{{Kind: "problem", Author: "user", Content: "the task"}}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if v := set.View(bd, "bot", public, ViewLimits{}); len(v) == 0 {
					b.Fatal("empty view")
				}
			}
		})
	}
}

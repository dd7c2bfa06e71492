package report

import (
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// An agent's signal says whether its heartbeat is recent (the page is
// rendered a minute after t0).
func TestReportSignalsAliveOrStale(t *testing.T) {
	tests := []struct {
		key   string
		value any
		want  string
	}{
		{"signal:fresh", map[string]any{"last_heartbeat": t0.Add(50 * time.Second).Format(time.RFC3339)}, `<code>signal:fresh</code> <span class="beat alive">alive</span>`},
		{"signal:gone", map[string]any{"last_heartbeat": t0.Add(-time.Minute).Format(time.RFC3339)}, `<code>signal:gone</code> <span class="beat stale">stale</span>`},
		{"task:x", "open", `<code>task:x</code></td>`},
	}
	for _, tt := range tests {
		page := render(t, board.Run{ID: "r"}, nil, func(b *board.Board) {
			b.SetClock(func() time.Time { return t0 })
			if _, err := b.Write(board.WriteOp{Key: tt.key, Value: tt.value, Author: "a", ExpectVersion: -1}); err != nil {
				t.Fatal(err)
			}
		})
		if !strings.Contains(page, tt.want) {
			t.Errorf("%s: page lacks %s", tt.key, tt.want)
		}
	}
}

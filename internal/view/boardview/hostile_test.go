package boardview

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/testutil/hostile"
)

// Whatever a board's keys, authors, values, labels and errors hold, the
// markdown view rendered by a real GFM renderer (raw HTML let through)
// has the elements it has for plain values (no link, image, heading,
// table, row, list, code block end, HTML or script from a value) and
// shows the values' text.
func TestMarkdownHostileValuesStayText(t *testing.T) {
	render := func(t *testing.T, v string) string {
		// The board holds no control character in a key: k is v without them.
		k := strings.Map(func(r rune) rune {
			if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
				return ' '
			}
			return r
		}, v)
		b := board.New(board.Run{ID: v, Status: board.StatusFailed, PlanPath: v, Error: v, StartedAt: t0})
		b.SetClock(func() time.Time { return t0 })
		write(t, b, board.WriteOp{Key: "task:" + k, Author: v, Value: map[string]any{"assigned_to": v, "status": v, "description": v}})
		write(t, b, board.WriteOp{Key: "signal:" + k, Author: v, Value: map[string]any{"agent_id": v, "status": v, "current_task": v}})
		write(t, b, board.WriteOp{Key: k, Author: v, Value: v})
		write(t, b, board.WriteOp{Key: "trace:" + k, Author: v, Value: v})
		write(t, b, board.WriteOp{Key: "c", Author: "alice", Value: v})
		write(t, b, board.WriteOp{Key: "c", Author: v, Value: v})
		out, _ := json.Marshal(map[string]any{"output": v})
		b.AddStep(board.StepRecord{Label: v, Visit: 1, Status: "succeeded", StartedAt: t0, Result: out})
		b.AddStep(board.StepRecord{Label: v, Visit: 2, Status: "failed", StartedAt: t0, Error: v})
		var buf bytes.Buffer
		if err := Markdown(&buf, b); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	plain := hostile.Parse(t, hostile.GFM(t, render(t, "plain")))
	for _, v := range hostile.Values {
		t.Run(v.Name, func(t *testing.T) {
			md := render(t, v.Text)
			got := hostile.Parse(t, hostile.GFM(t, md))
			// Single-line cells show the value's first line.
			first := v.Text
			if i := bytes.IndexAny([]byte(first), "\r\n"); i >= 0 {
				first = first[:i]
			}
			hostile.Same(t, plain, got, hostile.Visible(first))
			if t.Failed() {
				t.Logf("markdown:\n%s", md)
			}
		})
	}
}

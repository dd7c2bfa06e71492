package replay

import (
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// The quick comparison of two boards (same entries, same order) decides
// nothing the normal forms would decide otherwise: ids, sequence numbers,
// times and noise in meta never make a divergence, another order of the
// same entries neither, a different value always does.
func TestBoardDivergenceFastAndSlowAgree(t *testing.T) {
	ttl := 5.0
	base := func() []board.Entry {
		return []board.Entry{
			{ID: "1", Seq: 1, Section: "kv", Key: "a", Version: 1, Content: "x", Meta: map[string]any{"n": 1.0}, TS: time.Unix(1, 0)},
			{ID: "2", Seq: 2, Section: "kv", Key: "b", Version: 1, Content: map[string]any{"k": []any{1.0, "y"}}, TTL: &ttl, TS: time.Unix(2, 0)},
		}
	}
	tests := []struct {
		name    string
		change  func([]board.Entry) []board.Entry
		diverge bool
	}{
		{"identical", func(e []board.Entry) []board.Entry { return e }, false},
		{"other ids, seqs and times", func(e []board.Entry) []board.Entry {
			e[0].ID, e[0].Seq, e[0].TS = "9", 7, time.Unix(99, 0)
			return e
		}, false},
		{"another order", func(e []board.Entry) []board.Entry { return []board.Entry{e[1], e[0]} }, false},
		{"noise in meta", func(e []board.Entry) []board.Entry {
			e[0].Meta = map[string]any{"n": 1.0, "duration_ms": 3.0}
			return e
		}, false},
		{"a number of another Go type", func(e []board.Entry) []board.Entry {
			e[0].Meta = map[string]any{"n": 1}
			return e
		}, false},
		{"another content", func(e []board.Entry) []board.Entry { e[0].Content = "z"; return e }, true},
		{"a nested value differs", func(e []board.Entry) []board.Entry {
			e[1].Content = map[string]any{"k": []any{1.0, "z"}}
			return e
		}, true},
		{"another ttl", func(e []board.Entry) []board.Entry { v := 6.0; e[1].TTL = &v; return e }, true},
		{"no ttl", func(e []board.Entry) []board.Entry { e[1].TTL = nil; return e }, true},
		{"another key", func(e []board.Entry) []board.Entry { e[1].Key = "c"; return e }, true},
		{"another section", func(e []board.Entry) []board.Entry { e[0].Section = "notes"; return e }, true},
		{"another author", func(e []board.Entry) []board.Entry { e[0].Author = "me"; return e }, true},
		{"one entry more", func(e []board.Entry) []board.Entry { return append(e, e[0]) }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec, now := boardOf(t, base()), boardOf(t, tc.change(base()))
			d := boardDivergence(rec, now)
			if (d != nil) != tc.diverge {
				t.Fatalf("divergence %v, want %v", d, tc.diverge)
			}
			if d != nil && (d.Kind != KindBoard || d.Diff == "") {
				t.Errorf("divergence without its diff: %+v", d)
			}
		})
	}
}

func boardOf(t *testing.T, es []board.Entry) *board.Board {
	t.Helper()
	b := board.New(board.Run{ID: "t"})
	for _, e := range es {
		if _, err := b.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

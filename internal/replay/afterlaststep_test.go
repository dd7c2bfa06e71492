package replay

import (
	"fmt"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// The entries after a recording's last step entry are found however far
// back it is, and are all of them when the run wrote none.
func TestAfterLastStep(t *testing.T) {
	for _, tc := range []struct{ before, steps, after int }{
		{0, 0, 5}, {3, 1, 0}, {3, 2, 1}, {10, 1, 63}, {10, 1, 64}, {10, 3, 300}, {0, 1, 1000},
	} {
		b := board.New(board.Run{ID: "r"})
		add := func(n int, role string) {
			for range n {
				if _, err := b.Append(board.Entry{Section: "s", Role: role, Content: fmt.Sprint(b.Len())}); err != nil {
					t.Fatal(err)
				}
			}
		}
		add(tc.before, "agent")
		add(tc.steps, "step")
		add(tc.after, "agent")
		got := afterLastStep(b)
		want := tc.after
		if tc.steps == 0 {
			want = b.Len()
		}
		if len(got) != want || want > 0 && got[len(got)-1].Seq != int64(b.Len()) || want > 0 && got[0].Seq != int64(b.Len()-want+1) {
			t.Errorf("%+v: %d entries after the last step, want %d", tc, len(got), want)
		}
	}
}

package runs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// TestSummaryOfARunThatEndsWhileRead: a run that ends between its file
// being read (running) and its owner being asked for (gone, having
// ended) is what its file then says, not interrupted; a run whose file
// still says running once its owner is gone is interrupted. A listing
// and serve called a run that had just succeeded interrupted.
func TestSummaryOfARunThatEndsWhileRead(t *testing.T) {
	for _, ends := range []bool{true, false} {
		dir := t.TempDir()
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		id := board.NewID(at)
		path := filepath.Join(RunsDir(dir), id, "blackboard.json")
		if err := os.MkdirAll(filepath.Dir(path), board.DirMode); err != nil {
			t.Fatal(err)
		}
		b, err := board.Create(path, board.Run{ID: id, Status: board.StatusRunning, StartedAt: at}, board.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Save(); err != nil {
			t.Fatal(err)
		}
		b.Close()
		afterSummaryRead = func(p string) {
			afterSummaryRead = nil
			if !ends {
				return
			}
			b, err := board.Open(p, board.Options{})
			if err != nil {
				t.Fatal(err)
			}
			end := at.Add(time.Second)
			if err := b.UpdateRun(func(r *board.Run) { r.Status, r.FinishedAt = board.StatusSucceeded, &end }); err != nil {
				t.Fatal(err)
			}
			if err := b.Save(); err != nil {
				t.Fatal(err)
			}
			b.Close()
		}
		want := board.StatusInterrupted
		if ends {
			want = board.StatusSucceeded
		}
		if s := SummaryOf(path, dir); s.Status != want || s.Live {
			t.Errorf("ends while read %v: %s (live %v), want %s", ends, s.Status, s.Live, want)
		}
		afterSummaryRead = nil
	}
}

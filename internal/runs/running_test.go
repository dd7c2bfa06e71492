package runs

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// The running file lists the visits that started and did not end, oldest
// first, as a run killed at that moment leaves it (the tracker never
// closed), with thousands running at once; it stays near the size of what
// runs now however many visits have come and gone; the next process
// tracking the run (a resume) starts from nothing.
func TestRunningFileAfterACrash(t *testing.T) {
	for _, tc := range []struct {
		name          string
		started, left int // visits started; of those, the last left running
		parallel      bool
	}{
		{"one step", 1, 1, false},
		{"all ended", 300, 0, false},
		{"a few of many", 20_000, 3, false},
		{"many running", 5_000, 5_000, true},
		{"many of many, from goroutines", 10_000, 2_000, true},
		{"label to escape", 1, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bb := filepath.Join(t.TempDir(), "blackboard.json")
			r := trackRunning(bb, nil, nil)
			label := func(i int) string {
				if tc.name == "label to escape" {
					return "a \"quoted\" <label> é\n"
				}
				return fmt.Sprintf("s%d", i)
			}
			run := func(i int) {
				r.StepStarted(label(i), i%7+1, "group")
				if i < tc.started-tc.left {
					r.StepFinished(board.StepRecord{Label: label(i), Visit: i%7 + 1})
				}
			}
			if tc.parallel {
				var wg sync.WaitGroup
				for g := 0; g < 8; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := g; i < tc.started; i += 8 {
							run(i)
						}
					}()
				}
				wg.Wait()
			} else {
				for i := 0; i < tc.started; i++ {
					run(i)
				}
			}
			// Killed here: the file is as the run left it.
			got := readRunningFile(RunningPath(bb))
			if len(got) != tc.left {
				t.Fatalf("%d visits listed running, want %d", len(got), tc.left)
			}
			want := map[string]bool{}
			for i := tc.started - tc.left; i < tc.started; i++ {
				want[visitKey(label(i), i%7+1)] = true
			}
			for i, s := range got {
				if !want[visitKey(s.Label, s.Visit)] || s.Parent != "group" || s.Since.IsZero() {
					t.Fatalf("listed %+v, which did not start or ended", s)
				}
				delete(want, visitKey(s.Label, s.Visit))
				if i > 0 && s.Since.Before(got[i-1].Since) {
					t.Fatalf("not oldest first: %v after %v", s.Since, got[i-1].Since)
				}
			}
			fi, err := os.Stat(RunningPath(bb))
			if err != nil {
				t.Fatal(err)
			}
			if limit := int64(compactAt + 4*(tc.left+1)*128); fi.Size() > limit {
				t.Errorf("the file holds %d bytes for %d visits running: more than %d", fi.Size(), tc.left, limit)
			}

			next := trackRunning(bb, nil, nil)
			next.StepStarted("again", 1, "")
			if got := readRunningFile(RunningPath(bb)); len(got) != 1 || got[0].Label != "again" {
				t.Fatalf("the next process's file lists %+v, want only its own visit", got)
			}
			next.close()
			if _, err := os.Stat(RunningPath(bb)); !os.IsNotExist(err) {
				t.Errorf("the file is left after the run stopped: %v", err)
			}
		})
	}
}

package runs_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/testutil/manyruns"
)

// A run changed behind the run index's back is listed as its files say:
// the listing with the index equals the one made from the runs alone, and
// shows the change.
func TestListSeesRunsChangedBehindTheIndex(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, dir string, ids []string) // after the index is built
		check  func(t *testing.T, list []runs.Summary, ids []string)
	}{
		{"step added to the journal", func(t *testing.T, dir string, ids []string) {
			b := openBoard(t, dir, ids[3])
			at := time.Now().UTC()
			if err := b.AddStep(board.StepRecord{Label: "c", Visit: 1, Type: "command", Status: board.StatusFailed,
				StartedAt: at, FinishedAt: at, Result: []byte(`{"exit_code":1}`)}); err != nil {
				t.Fatal(err)
			}
			b.Close()
		}, func(t *testing.T, list []runs.Summary, ids []string) {
			if s := find(list, ids[3]); s == nil || s.Steps != 3 || s.Failed != 1 {
				t.Errorf("run %s: %+v; want 3 steps, 1 failed", ids[3], s)
			}
		}},
		{"board saved anew", func(t *testing.T, dir string, ids []string) {
			b := openBoard(t, dir, ids[4])
			if err := b.UpdateRun(func(r *board.Run) { r.Status = board.StatusFailed }); err != nil {
				t.Fatal(err)
			}
			if err := b.Save(); err != nil {
				t.Fatal(err)
			}
			b.Close()
		}, func(t *testing.T, list []runs.Summary, ids []string) {
			if s := find(list, ids[4]); s == nil || s.Status != board.StatusFailed {
				t.Errorf("run %s: %+v; want failed", ids[4], s)
			}
		}},
		{"folder removed", func(t *testing.T, dir string, ids []string) {
			must(t, os.RemoveAll(filepath.Join(runs.RunsDir(dir), ids[5])))
		}, func(t *testing.T, list []runs.Summary, ids []string) {
			if s := find(list, ids[5]); s != nil || len(list) != len(ids)-1 {
				t.Errorf("%d runs, %s among them: want it gone", len(list), ids[5])
			}
		}},
		{"new folder without an entry", func(t *testing.T, dir string, ids []string) {
			other := t.TempDir()
			must(t, manyruns.Write(other, 1))
			list, err := runs.List(other)
			if err != nil || len(list) != 1 {
				t.Fatal(list, err)
			}
			must(t, os.Rename(filepath.Dir(list[0].Path), filepath.Join(runs.RunsDir(dir), list[0].ID)))
		}, func(t *testing.T, list []runs.Summary, ids []string) {
			if len(list) != len(ids)+1 {
				t.Errorf("%d runs, want %d", len(list), len(ids)+1)
			}
		}},
		{"torn line after a changed run", func(t *testing.T, dir string, ids []string) {
			// A listing's append died mid-line: what it had of the line
			// (the run's old entry, cut) must not stand for the run.
			data, err := os.ReadFile(runs.IndexPath(dir))
			must(t, err)
			b := openBoard(t, dir, ids[6])
			must(t, b.UpdateRun(func(r *board.Run) { r.Status = board.StatusInterrupted }))
			b.Close()
			f, err := os.OpenFile(runs.IndexPath(dir), os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			_, err = f.Write(data[:len(data)/len(ids)*6+40])
			must(t, err)
			f.Close()
		}, func(t *testing.T, list []runs.Summary, ids []string) {
			if s := find(list, ids[6]); s == nil || s.Status != board.StatusInterrupted {
				t.Errorf("run %s: %+v; want interrupted", ids[6], s)
			}
		}},
		{"index garbled", func(t *testing.T, dir string, ids []string) {
			must(t, os.WriteFile(runs.IndexPath(dir), []byte("{\"v\":1,\"id\":\""+ids[0]+"\",\"k\":[1,\n\x00\xff\n"), 0o600))
		}, func(t *testing.T, list []runs.Summary, ids []string) {
			if len(list) != len(ids) {
				t.Errorf("%d runs, want %d", len(list), len(ids))
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, manyruns.Write(dir, 12))
			before, err := runs.List(dir) // builds the index
			must(t, err)
			ids := make([]string, len(before))
			for i, s := range before {
				ids[i] = s.ID
			}
			if _, err := os.Stat(runs.IndexPath(dir)); err != nil {
				t.Fatalf("no index after a listing: %v", err)
			}
			c.change(t, dir, ids)
			got, err := runs.List(dir)
			must(t, err)
			c.check(t, got, ids)
			again, err := runs.List(dir) // from the index the listing fixed
			must(t, err)
			must(t, os.Remove(runs.IndexPath(dir)))
			want, err := runs.List(dir) // from the runs alone
			must(t, err)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(again, want) {
				t.Errorf("with the index:\n%+v\nthen:\n%+v\nfrom the runs:\n%+v", got, again, want)
			}
		})
	}
}

func openBoard(t *testing.T, dir, id string) *board.Board {
	t.Helper()
	b, err := board.OpenAppend(filepath.Join(runs.RunsDir(dir), id, "blackboard.json"), board.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func find(list []runs.Summary, id string) *runs.Summary {
	for i := range list {
		if list[i].ID == id {
			return &list[i]
		}
	}
	return nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

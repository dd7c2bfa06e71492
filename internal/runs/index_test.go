package runs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
)

// indexedRun saves a finished run of two steps under dir, the second
// with status, and returns its blackboard.json: its file holds it all
// (no journal), as a run that was resumed and saved leaves it.
func indexedRun(t *testing.T, dir, status string, at time.Time) string {
	t.Helper()
	id := board.NewID(at)
	path := filepath.Join(RunsDir(dir), id, "blackboard.json")
	if err := os.MkdirAll(filepath.Dir(path), board.DirMode); err != nil {
		t.Fatal(err)
	}
	b, err := board.Create(path, board.Run{ID: id, PlanPath: filepath.Join(dir, "plan.yaml"), Status: board.StatusRunning, StartedAt: at}, board.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range []string{board.StatusSucceeded, status} {
		end := at.Add(time.Duration(i+1) * time.Second)
		if err := b.AddStep(board.StepRecord{Label: []string{"a", "b"}[i], Visit: 1, Type: "command", Status: st, StartedAt: end, FinishedAt: end}); err != nil {
			t.Fatal(err)
		}
	}
	end := at.Add(3 * time.Second)
	if err := b.UpdateRun(func(r *board.Run) { r.Status, r.FinishedAt = status, &end }); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	return path
}

// listed is what a listing says of each run, and what reading every run
// without the index says.
func listed(t *testing.T, dir string) (got, want map[string]string) {
	t.Helper()
	list, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, want = map[string]string{}, map[string]string{}
	for _, s := range list {
		got[s.ID] = s.StatusText() + " " + s.StepsText()
	}
	ids, _ := runDirs(dir)
	for _, id := range ids {
		path := filepath.Join(RunsDir(dir), id, "blackboard.json")
		if !exists(path) {
			continue
		}
		s := SummaryOf(path, dir)
		want[s.ID] = s.StatusText() + " " + s.StepsText()
	}
	return got, want
}

// indexHolds waits (a bounded while) until listing dir leaves an entry
// for every run of paths that holds for it as it is: a run read in the
// same tick of the file system's clock as its last change is noted with
// no key, and read again by the next listing.
func indexHolds(t *testing.T, dir string, paths ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		List(dir)
		ix := readIndex(IndexPath(dir))
		held := 0
		for _, p := range paths {
			key, _ := keyOf(p)
			if e, ok := ix.entry(filepath.Base(filepath.Dir(p))); ok && e.Key == key {
				held++
			}
		}
		if held == len(paths) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10s, %d of %d runs have an entry that holds", held, len(paths))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lockedBefore takes and lets go of the lock of the run at path, as a
// command that wrote it did, and waits until the index holds again: the
// lock file is there, and a later owner is written over it in place.
func lockedBefore(t *testing.T, dir, path string) {
	t.Helper()
	l, err := boardlock.TryLock(path, boardlock.Owner{Kind: boardlock.OwnerCLI})
	if err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	indexHolds(t, dir, path)
}

// deadPID is the id of a process that has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// A run changed behind the index's back (by another process, a crash,
// or by hand) is listed as its files say, never as its entry does.
func TestListSeesRunsChangedBehindTheIndex(t *testing.T) {
	tests := []struct {
		name string
		// change changes the run at path (the second of three, failed)
		// under dir after the index holds; the returned func, if any, is
		// a second change, listed again after it.
		change func(t *testing.T, dir, path string) func()
		// want is the changed run's status and steps, "" where it is
		// gone; thenWant, after the second change.
		want, thenWant string
	}{
		{"board rewritten", func(t *testing.T, dir, path string) func() {
			b, err := board.Open(path, board.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if err := b.UpdateRun(func(r *board.Run) { r.Status = board.StatusSucceeded }); err != nil {
				t.Fatal(err)
			}
			if err := b.Save(); err != nil {
				t.Fatal(err)
			}
			return nil
		}, "succeeded 2 (1 failed)", ""},
		{"journal appended", func(t *testing.T, dir, path string) func() {
			// The first step makes the journal; the second is appended
			// to it once the index holds again.
			for _, label := range []string{"c", "d"} {
				b, err := board.OpenAppend(path, board.Options{})
				if err != nil {
					t.Fatal(err)
				}
				at := time.Now()
				if err := b.AddStep(board.StepRecord{Label: label, Visit: 1, Type: "command", Status: board.StatusFailed, StartedAt: at, FinishedAt: at}); err != nil {
					t.Fatal(err)
				}
				b.Close()
				if label == "c" {
					indexHolds(t, dir, path)
				}
			}
			return nil
		}, "failed 4 (3 failed)", ""},
		{"lock taken by a resume that runs", func(t *testing.T, dir, path string) func() {
			lockedBefore(t, dir, path)
			l, err := boardlock.TryLock(path, boardlock.Owner{Kind: boardlock.OwnerRun, PID: os.Getppid()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Unlock() })
			return nil
		}, "running (live) 2 (1 failed)", ""},
		{"lock taken, then let go by a resume that died", func(t *testing.T, dir, path string) func() {
			lockedBefore(t, dir, path)
			l, err := boardlock.TryLock(path, boardlock.Owner{Kind: boardlock.OwnerRun, PID: os.Getppid()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Unlock() })
			return func() {
				if err := l.SetOwner(boardlock.Owner{Kind: boardlock.OwnerRun, PID: deadPID(t)}); err != nil {
					t.Fatal(err)
				}
				l.Unlock()
			}
		}, "running (live) 2 (1 failed)", "failed 2 (1 failed)"},
		{"folder removed", func(t *testing.T, dir, path string) func() {
			if err := os.RemoveAll(filepath.Dir(path)); err != nil {
				t.Fatal(err)
			}
			return nil
		}, "", ""},
		{"torn index line", func(t *testing.T, dir, path string) func() {
			// A writer died mid-line, after a line that says the run
			// succeeded with the key it has: the line is cut, so read as
			// no line at all.
			key, _ := keyOf(path)
			e := entryOf(key, Summary{ID: filepath.Base(filepath.Dir(path)), Status: board.StatusSucceeded})
			var buf bytes.Buffer
			appendIndex(IndexPath(dir), []indexEntry{e})
			data, _ := os.ReadFile(IndexPath(dir))
			buf.Write(data[:len(data)-1]) // its newline lost
			if err := os.WriteFile(IndexPath(dir), buf.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			return nil
		}, "failed 2 (1 failed)", ""},
		{"a change in the same tick as the one before", func(t *testing.T, dir, path string) func() {
			// The run changes (its folder touched) and is listed before
			// the file system's clock moves on (fsNow says so): its entry
			// must not vouch for it, since a change in the same tick
			// leaves its folder's stat as it is. That change is made by
			// hand below, in place, so that the folder's stat stays.
			boardlock.Touch(path)
			key, _ := keyOf(path)
			fsNow = func(string) (int64, int64, bool) { return key.stamp(), key.dev(), true }
			defer func() { fsNow = fsNowOS }()
			List(dir)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			data = bytes.ReplaceAll(data, []byte(`"status":"failed"`), []byte(`"status":"succeeded"`))
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(data)
			f.Close()
			if now, _ := keyOf(path); now != key {
				t.Fatalf("the run's folder changed: %v, was %v", now, key)
			}
			return nil
		}, "succeeded 2", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			at := time.Now().Add(-time.Hour)
			paths := []string{
				indexedRun(t, dir, board.StatusSucceeded, at),
				indexedRun(t, dir, board.StatusFailed, at.Add(time.Minute)),
				indexedRun(t, dir, board.StatusSucceeded, at.Add(2*time.Minute)),
			}
			indexHolds(t, dir, paths...)
			id := filepath.Base(filepath.Dir(paths[1]))
			check := func(step, want string) {
				t.Helper()
				got, truth := listed(t, dir)
				if !reflect.DeepEqual(got, truth) {
					t.Fatalf("%s: listed %v, the runs say %v", step, got, truth)
				}
				if got[id] != want {
					t.Fatalf("%s: the run is listed %q, want %q", step, got[id], want)
				}
			}
			then := tt.change(t, dir, paths[1])
			check("changed", tt.want)
			check("listed again", tt.want) // from what the first listing noted
			if then != nil {
				then()
				check("changed again", tt.thenWant)
				check("listed again after", tt.thenWant)
			}
		})
	}
}

// A run saved after the index was written, and a lost index, are read
// from the runs.
func TestListSeesRunsTheIndexLacks(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, dir string)
	}{
		{"a new folder without an entry", func(t *testing.T, dir string) {
			indexedRun(t, dir, board.StatusFailed, time.Now())
		}},
		{"the index removed", func(t *testing.T, dir string) {
			os.Remove(IndexPath(dir))
		}},
		{"the index of another version", func(t *testing.T, dir string) {
			data, _ := os.ReadFile(IndexPath(dir))
			os.WriteFile(IndexPath(dir), bytes.ReplaceAll(data, []byte(`{"v":2,`), []byte(`{"v":1,`)), 0o600)
		}},
		{"an empty folder and a stray file", func(t *testing.T, dir string) {
			os.MkdirAll(filepath.Join(RunsDir(dir), board.NewID(time.Now())), board.DirMode)
			os.WriteFile(filepath.Join(RunsDir(dir), board.NewID(time.Now())), nil, 0o600)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			at := time.Now().Add(-time.Hour)
			paths := []string{indexedRun(t, dir, board.StatusSucceeded, at), indexedRun(t, dir, board.StatusFailed, at.Add(time.Minute))}
			indexHolds(t, dir, paths...)
			tt.change(t, dir)
			got, want := listed(t, dir)
			if !reflect.DeepEqual(got, want) || len(got) < 2 {
				t.Fatalf("listed %v, the runs say %v", got, want)
			}
		})
	}
}

// An entry's key is kept only when the file system's clock had passed
// the run's last change before the run was read.
func TestStableKey(t *testing.T) {
	var key fileKey
	key[1], key[5] = 1000, 7 // its stamp and device where they are kept (unix)
	if key.stamp() != 1000 || key.dev() != 7 {
		t.Skip("this system's key keeps its times elsewhere")
	}
	tests := []struct {
		name     string
		now, dev int64
		ok       bool
		want     fileKey
	}{
		{"the clock passed it", 1001, 7, true, key},
		{"the same tick", 1000, 7, true, fileKey{}},
		{"the clock behind it", 999, 7, true, fileKey{}},
		{"another file system's clock", 1001, 8, true, fileKey{}},
		{"no clock", 1001, 7, false, fileKey{}},
	}
	for _, tt := range tests {
		if got := stableKey(key, tt.now, tt.dev, tt.ok); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

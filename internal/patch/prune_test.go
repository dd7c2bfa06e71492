package patch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// counterDiff changes one line of f from "n=<i>" to "n=<i+1>".
func counterDiff(f string, i int) string {
	return fmt.Sprintf("--- %s\n+++ %s\n@@ -1 +1 @@\n-n=%d\n+n=%d\n", f, f, i, i+1)
}

// backupsIn lists the whole backups of dir, oldest first.
func backupsIn(t *testing.T, dir string) []string {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	bs, err := listBackups(root)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, b := range bs {
		out = append(out, b.dir)
	}
	return out
}

// TestBackupsArePruned: 30 applies keep the newest N backups (20 by
// default), each of which undo still restores; undo of a pruned one says
// it was pruned.
func TestBackupsArePruned(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep int
		id   func(i int) string // BackupID
		want int
	}{
		{"default", 0, func(int) string { return "" }, DefaultKeepBackups},
		{"keep 3", 3, func(int) string { return "" }, 3},
		{"keep 1", 1, func(int) string { return "" }, 1},
		{"a run's steps", 4, func(i int) string { return fmt.Sprintf("run%d/apply-%d", i%3, i) }, 4},
		{"keep all", KeepAllBackups, func(int) string { return "" }, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.WriteFile(filepath.Join(dir, "c.txt"), []byte("n=0\n"), 0o644))
			var made []string
			for i := 0; i < 30; i++ {
				res, err := Apply(context.Background(), dir, []byte(counterDiff("c.txt", i)), Options{BackupID: tc.id(i), KeepBackups: tc.keep})
				if err != nil {
					t.Fatalf("apply %d: %v", i, err)
				}
				made = append(made, res.BackupDir)
			}
			got := backupsIn(t, dir)
			if len(got) != tc.want {
				t.Fatalf("%d backups kept, want %d: %v", len(got), tc.want, got)
			}
			if want := made[len(made)-tc.want:]; strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("kept %v, want the newest %v", got, want)
			}
			// Every backup left is whole: nothing half removed or renamed.
			ents, _ := os.ReadDir(filepath.Join(dir, BackupRoot))
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), prunedPrefix) {
					t.Errorf("left behind: %s", e.Name())
				}
			}
			// Undo of each kept backup, newest first, walks the file back.
			for i := len(made) - 1; i >= len(made)-tc.want; i-- {
				if err := Rollback(dir, made[i]); err != nil {
					t.Fatalf("undo of kept %s: %v", made[i], err)
				}
				if b, _ := os.ReadFile(filepath.Join(dir, "c.txt")); string(b) != fmt.Sprintf("n=%d\n", i) {
					t.Fatalf("after undo of %s: %q, want n=%d", made[i], b, i)
				}
			}
			if tc.want == len(made) {
				return
			}
			err := Rollback(dir, made[0])
			if err == nil || !strings.Contains(err.Error(), "no backup at "+made[0]+": it was pruned") {
				t.Errorf("undo of a pruned backup: %v", err)
			}
		})
	}
}

// TestBackupInUseIsNotPruned: a backup that an undo (or an apply) holds is
// left alone, and pruned by the next apply once free.
func TestBackupInUseIsNotPruned(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "c.txt"), []byte("n=0\n"), 0o644))
	apply := func(i int) string {
		t.Helper()
		res, err := Apply(context.Background(), dir, []byte(counterDiff("c.txt", i)), Options{KeepBackups: 1})
		if err != nil {
			t.Fatal(err)
		}
		return res.BackupDir
	}
	first := apply(0)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	held, err := lockDir(root, first, false, true) // as Rollback holds it
	if err != nil {
		t.Fatal(err)
	}
	second := apply(1)
	if got := backupsIn(t, dir); strings.Join(got, " ") != first+" "+second {
		t.Fatalf("with the first backup in use: %v, want both", got)
	}
	held.Close()
	third := apply(2)
	if got := backupsIn(t, dir); strings.Join(got, " ") != third {
		t.Fatalf("once free: %v, want only %s", got, third)
	}
}

// TestConcurrentAppliesPrune: applies running at once, in the same
// directory, each pruning, all succeed; what is left are whole backups,
// and one more apply brings them down to the bound.
func TestConcurrentAppliesPrune(t *testing.T) {
	dir := t.TempDir()
	const workers, each, keep = 6, 8, 2
	for w := 0; w < workers; w++ {
		must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", w)), []byte("n=0\n"), 0o644))
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers*each*2)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			f := fmt.Sprintf("f%d.txt", w)
			// Each worker's backup ids are its own: an id pruned and then
			// taken again by another worker's apply would make the undo
			// below find that apply's backup (safety_test.go covers two
			// applies asking for one id).
			for i := 0; i < each; i++ {
				res, err := Apply(context.Background(), dir, []byte(counterDiff(f, i)), Options{BackupID: fmt.Sprintf("run%d/s%d-%d", w%2, w, i), KeepBackups: keep})
				if err != nil {
					errs <- fmt.Errorf("%s apply %d: %w", f, i, err)
					return
				}
				// An undo right away: restores the file, or says the backup
				// was pruned (and then the file is untouched).
				err = Rollback(dir, res.BackupDir)
				b, _ := os.ReadFile(filepath.Join(dir, f))
				switch {
				case err == nil && string(b) == fmt.Sprintf("n=%d\n", i):
				case err != nil && strings.Contains(err.Error(), "it was pruned") && string(b) == fmt.Sprintf("n=%d\n", i+1):
				default:
					errs <- fmt.Errorf("%s undo %d: %v, file %q", f, i, err, b)
					return
				}
				// The next round changes n=<i+1>.
				if err := os.WriteFile(filepath.Join(dir, f), []byte(fmt.Sprintf("n=%d\n", i+1)), 0o644); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, b := range backupsIn(t, dir) {
		if _, err := os.Stat(filepath.Join(dir, b, manifestName)); err != nil {
			t.Errorf("backup %s is not whole: %v", b, err)
		}
	}
	must(t, os.WriteFile(filepath.Join(dir, "last.txt"), []byte("n=0\n"), 0o644))
	if _, err := Apply(context.Background(), dir, []byte(counterDiff("last.txt", 0)), Options{KeepBackups: keep}); err != nil {
		t.Fatal(err)
	}
	if got := backupsIn(t, dir); len(got) != keep {
		t.Errorf("%d backups after a last apply, want %d: %v", len(got), keep, got)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, BackupRoot))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prunedPrefix) {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

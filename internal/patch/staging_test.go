package patch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStagingIsHiddenAndCleaned: while an apply runs, its temporary files
// are under .runner/staging, never beside the files; when it ends the
// staging directory is gone (and .runner, if the apply made it and keeps
// no backup); what a killed apply left there is removed by the next
// apply, but not what a live one holds.
func TestStagingIsHiddenAndCleaned(t *testing.T) {
	dir := twoFileTree(t)
	// Left by an apply killed after it locked its directory (the lock
	// died with it), and by one killed before it could lock (its pid is
	// no process's: pids are below 1<<22).
	for _, stale := range []string{".runner/staging/999-aaaaaaaaaaaa", ".runner/staging/4194305-bbbbbbbbbbbb"} {
		must(t, os.MkdirAll(filepath.Join(dir, stale), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, stale, "1"), []byte("half a file"), 0o600))
	}
	must(t, os.WriteFile(filepath.Join(dir, ".runner/staging/999-aaaaaaaaaaaa/lock"), nil, 0o600))
	// Held by an apply that is still running (here, this process).
	live := filepath.Join(dir, ".runner/staging/1-cccccccccccc")
	must(t, os.MkdirAll(live, 0o755))
	root, err := os.OpenRoot(dir)
	must(t, err)
	defer root.Close()
	lock, err := lockStaging(root, ".runner/staging/1-cccccccccccc")
	must(t, err)
	defer lock.Close()

	var seen []string
	testHook = func(phase, p string) {
		if phase != "commit" {
			return
		}
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.Contains(p, ".runner-") {
				seen = append(seen, p)
			}
			return nil
		})
	}
	defer func() { testHook = nil }()
	if _, err := Apply(context.Background(), dir, []byte(twoFiles), Options{Strip: DetectStrip, NoBackup: true}); err != nil {
		t.Fatal(err)
	}
	if len(seen) > 0 {
		t.Errorf("temporary files beside the files while writing: %v", seen)
	}
	ents, err := os.ReadDir(filepath.Join(dir, ".runner/staging"))
	must(t, err)
	if len(ents) != 1 || ents[0].Name() != "1-cccccccccccc" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf(".runner/staging holds %v, want only the live apply's directory", names)
	}

	// Without stale or live staging, nothing of it stays, nor .runner.
	dir = twoFileTree(t)
	if _, err := Apply(context.Background(), dir, []byte(twoFiles), Options{Strip: DetectStrip, NoBackup: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".runner")); !os.IsNotExist(err) {
		t.Errorf(".runner is left behind by an apply without backups: %v", err)
	}
	// An empty .runner that was there stays, and only it.
	dir = twoFileTree(t)
	must(t, os.Mkdir(filepath.Join(dir, ".runner"), 0o755))
	if _, err := Apply(context.Background(), dir, []byte(twoFiles), Options{Strip: DetectStrip, NoBackup: true}); err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(filepath.Join(dir, ".runner")); err != nil || len(ents) != 0 {
		t.Errorf(".runner was there, empty: now %v, %v", ents, err)
	}
}

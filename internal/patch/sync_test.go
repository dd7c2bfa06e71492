package patch

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestNewContentsDurableBeforeRename: the new contents, written without
// an fsync each, are made durable at once ("sync": syncfs, or an fsync
// per staged file when that fails) after every one is staged and before
// the first is renamed into place; so a power cut leaves each file as it
// was or whole. The apply is right either way.
func TestNewContentsDurableBeforeRename(t *testing.T) {
	if !haveSyncFS {
		t.Skip("each new content is fsynced as it is written here")
	}
	for _, tc := range []struct {
		name  string
		fails bool
	}{{"syncfs", false}, {"syncfs fails: fsync each", true}} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(b bool) { syncFSFails = b }(syncFSFails)
			syncFSFails = tc.fails
			dir := t.TempDir()
			writeTree(t, dir, map[string][]byte{"a.txt": []byte("a\n"), "d/b.txt": []byte("b\n"), "d/e/c.txt": []byte("c\n")})
			var phases []string
			var mu sync.Mutex // the planning phases are called from parallel workers
			testHook = func(phase, p string) { mu.Lock(); phases = append(phases, phase); mu.Unlock() }
			defer func() { testHook = nil }()
			diff := "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n" +
				"--- a/d/b.txt\n+++ b/d/b.txt\n@@ -1 +1 @@\n-b\n+B\n" +
				"--- a/d/e/c.txt\n+++ b/d/e/c.txt\n@@ -1 +1 @@\n-c\n+C\n" +
				"--- /dev/null\n+++ b/n/new.txt\n@@ -0,0 +1 @@\n+n\n"
			if _, err := Apply(context.Background(), dir, []byte(diff), Options{Strip: 1}); err != nil {
				t.Fatal(err)
			}
			syncAt := slices.Index(phases, "sync")
			firstCommit := slices.Index(phases, "commit")
			lastStage := -1
			for i, ph := range phases {
				if ph == "stage" {
					lastStage = i
				}
			}
			switch {
			case syncAt < 0:
				t.Fatalf("the new contents were never made durable before the renames: phases %v", phases)
			case slices.Index(phases[syncAt+1:], "sync") >= 0:
				t.Errorf("synced more than once: %v", phases)
			case firstCommit < syncAt:
				t.Errorf("a file was renamed into place before the new contents were durable: %v", phases)
			case lastStage > syncAt:
				t.Errorf("a file was staged after the sync: %v", phases)
			}
			for p, want := range map[string]string{"a.txt": "A\n", "d/b.txt": "B\n", "d/e/c.txt": "C\n", "n/new.txt": "n\n"} {
				if b, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(b) != want {
					t.Errorf("%s = %q, %v; want %q", p, b, err, want)
				}
			}
		})
	}
}

package patch

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestRemovesEmptiedDirs: deleting every file of a directory removes it,
// and its parents as far up as they are empty, as git does; a rollback
// brings back files, directories and modes.
func TestRemovesEmptiedDirs(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string][]byte{
		"a/b/c/only.txt": []byte("x\n"),
		"a/keep.txt":     []byte("k\n"),
		"d/e/one.txt":    []byte("1\n"),
		"d/e/two.txt":    []byte("2\n"),
		"run.sh":         []byte("echo\n"),
	})
	must(t, os.MkdirAll(filepath.Join(dir, "empty/already"), 0o755))
	before := snapshot(t, dir)
	diff := "--- a/a/b/c/only.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n" +
		"--- a/d/e/one.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-1\n" +
		"diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
	res, err := Apply(context.Background(), dir, []byte(diff), Options{Strip: DetectStrip})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{"a/b": false, "a": true, "a/keep.txt": true, "d/e": true, "d/e/two.txt": true, "empty/already": true} {
		_, err := os.Lstat(filepath.Join(dir, p))
		if (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", p, err == nil, want)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dir, "run.sh")); fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh mode %v", fi.Mode())
	}
	must(t, Rollback(dir, res.BackupDir))
	must(t, os.RemoveAll(filepath.Join(dir, ".runner")))
	if after := snapshot(t, dir); !sameSnapshot(before, after) {
		t.Errorf("rollback did not restore the tree:\nbefore %v\nafter  %v", before, after)
	}
}

// TestCheckBuildsNothing: a check places and measures but builds no new
// content, so it allocates far less than the files it reads.
func TestCheckBuildsNothing(t *testing.T) {
	dir := t.TempDir()
	var big []byte
	for i := range 20000 {
		big = append(big, []byte("line "+string(rune('a'+i%26))+"\n")...)
	}
	writeTree(t, dir, map[string][]byte{"big.txt": big})
	diff := []byte("--- a/big.txt\n+++ b/big.txt\n@@ -1,3 +1,3 @@\n line a\n-line b\n+line B\n line c\n")
	// The least of several checks: a check reuses the buffer an earlier
	// one gave back when the pool still holds it, and a pool may drop what
	// it holds at any time (the race detector drops a quarter on purpose).
	perCheck := uint64(math.MaxUint64)
	for range 8 {
		var ms0, ms1 runtimeMem
		ms0.read()
		if _, err := Apply(context.Background(), dir, diff, Options{Strip: DetectStrip, Check: true}); err != nil {
			t.Fatal(err)
		}
		ms1.read()
		perCheck = min(perCheck, ms1.bytes-ms0.bytes)
	}
	// The file's buffer is the one an earlier check gave back, and its
	// lines are indexed (4 bytes a line); a built result would be another
	// copy of the file.
	if limit := uint64(4*20000 + 64<<10); perCheck > limit {
		t.Errorf("a check allocates %d bytes for a %d-byte file; want under %d", perCheck, len(big), limit)
	}
}

package patch

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// snapshot records every file, directory and link under root, with modes
// and link targets, to prove a refusal touched nothing.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			m[rel] = "link " + target
		case fi.IsDir():
			m[rel] = "dir " + fi.Mode().String()
		default:
			b, _ := os.ReadFile(p)
			m[rel] = fi.Mode().String() + " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameSnapshot(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestUnsafePaths: every way out of the directory is refused and nothing
// anywhere changes, inside or outside.
func TestUnsafePaths(t *testing.T) {
	modify := func(name string) string {
		return "--- " + name + "\n+++ " + name + "\n@@ -1 +1 @@\n-secret\n+pwned\n"
	}
	create := func(name string) string {
		return "--- /dev/null\n+++ " + name + "\n@@ -0,0 +1 @@\n+pwned\n"
	}
	cases := []struct {
		name, diff string
		setup      func(t *testing.T, dir, outside string)
	}{
		{"dot-dot modify", modify("a/../outside/secret.txt"), nil},
		{"dot-dot create", create("b/../outside/new.txt"), nil},
		{"dot-dot deep", modify("a/sub/../../outside/secret.txt"), nil},
		{"dot-dot in the middle", create("b/sub/../inside.txt"), nil},
		{"absolute", modify("/etc/passwd"), nil},
		{"absolute create", create("OUTSIDE_ABS"), nil}, // rewritten in the test to the outside path
		{"windows drive", create("C:/x.txt"), nil},
		{"backslash", create(`b/..\..\outside\new.txt`), nil},
		{"NUL in a quoted name", create(`"b/x\000y"`), nil},
		{"newline in a quoted name", create(`"b/x\ny"`), nil},
		{".git", create("b/.git/hooks/pre-commit"), nil},
		{".runner", create("b/.runner/backups/x"), nil},
		{"symlink to outside file", modify("a/link.txt"), func(t *testing.T, dir, outside string) {
			must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "link.txt")))
		}},
		{"symlink to inside file", modify("a/link.txt"), func(t *testing.T, dir, outside string) {
			must(t, os.WriteFile(filepath.Join(dir, "real.txt"), []byte("secret\n"), 0o644))
			must(t, os.Symlink("real.txt", filepath.Join(dir, "link.txt")))
		}},
		{"symlinked directory to outside", modify("a/d/secret.txt"), func(t *testing.T, dir, outside string) {
			must(t, os.Symlink(outside, filepath.Join(dir, "d")))
		}},
		{"symlinked directory inside", modify("a/d/secret.txt"), func(t *testing.T, dir, outside string) {
			must(t, os.MkdirAll(filepath.Join(dir, "real"), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "real", "secret.txt"), []byte("secret\n"), 0o644))
			must(t, os.Symlink("real", filepath.Join(dir, "d")))
		}},
		{"create through symlinked directory", create("b/d/new.txt"), func(t *testing.T, dir, outside string) {
			must(t, os.Symlink(outside, filepath.Join(dir, "d")))
		}},
		{"create over a dangling symlink", create("b/new.txt"), func(t *testing.T, dir, outside string) {
			must(t, os.Symlink(filepath.Join(outside, "new.txt"), filepath.Join(dir, "new.txt")))
		}},
		{"backups through a symlinked .runner", modify("a/ok.txt"), func(t *testing.T, dir, outside string) {
			must(t, os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("secret\n"), 0o644))
			must(t, os.Symlink(outside, filepath.Join(dir, ".runner")))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			top := t.TempDir()
			dir, outside := filepath.Join(top, "work"), filepath.Join(top, "outside")
			must(t, os.MkdirAll(dir, 0o755))
			must(t, os.MkdirAll(outside, 0o755))
			must(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret\n"), 0o644))
			must(t, os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("keep\n"), 0o644))
			if tc.setup != nil {
				tc.setup(t, dir, outside)
			}
			diff := strings.ReplaceAll(tc.diff, "OUTSIDE_ABS", filepath.Join(outside, "abs.txt"))
			before := snapshot(t, top)
			res, err := Apply(context.Background(), dir, []byte(diff), Options{Strip: DetectStrip})
			if err == nil {
				t.Fatalf("applied: %+v", res)
			}
			if !sameSnapshot(before, snapshot(t, top)) {
				t.Errorf("the tree changed after: %v", err)
			}
			if _, ok := IsRefused(err); !ok && tc.name != "backups through a symlinked .runner" {
				t.Errorf("not a refusal: %v", err)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

const twoFiles = "--- a/one.txt\n+++ b/one.txt\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n" +
	"--- a/sub/two.txt\n+++ b/sub/two.txt\n@@ -1,2 +1,2 @@\n-c\n+C\n d\n" +
	"--- /dev/null\n+++ b/newdir/three.txt\n@@ -0,0 +1 @@\n+new\n"

func twoFileTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "one.txt"), []byte("a\nb\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "sub", "two.txt"), []byte("c\nd\n"), 0o600))
	must(t, os.Chmod(filepath.Join(dir, "one.txt"), 0o755)) // past the umask
	return dir
}

// TestAllOrNothing: a diff whose second file fails leaves every file as it
// was, byte for byte and mode for mode, whether the failure is found
// while planning, while writing, or is an interruption between files.
func TestAllOrNothing(t *testing.T) {
	t.Run("second file does not apply", func(t *testing.T) {
		dir := twoFileTree(t)
		before := snapshot(t, dir)
		_, err := Apply(context.Background(), dir, []byte(strings.Replace(twoFiles, "-c\n", "-x\n", 1)), Options{Strip: DetectStrip})
		if k, ok := IsRefused(err); !ok || k != DoesNotApply {
			t.Fatalf("err = %v", err)
		}
		if !sameSnapshot(before, snapshot(t, dir)) {
			t.Error("tree changed")
		}
	})
	t.Run("second file cannot be written", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root ignores directory permissions")
		}
		dir := twoFileTree(t)
		before := snapshot(t, dir)
		must(t, os.Chmod(filepath.Join(dir, "sub"), 0o555))
		defer os.Chmod(filepath.Join(dir, "sub"), 0o755)
		_, err := Apply(context.Background(), dir, []byte(twoFiles), Options{Strip: DetectStrip})
		if err == nil || !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("err = %v", err)
		}
		if _, ok := IsRefused(err); ok {
			t.Errorf("an I/O error reported as a refusal: %v", err)
		}
		must(t, os.Chmod(filepath.Join(dir, "sub"), 0o755))
		if !sameSnapshot(before, snapshot(t, dir)) {
			t.Errorf("tree changed: %v", snapshot(t, dir))
		}
	})
	t.Run("third file cannot be staged", func(t *testing.T) {
		dir := twoFileTree(t)
		before := snapshot(t, dir)
		testHook = func(phase, p string) {
			if phase == "stage" && p == "newdir/three.txt" { // a file where its directory goes
				os.WriteFile(filepath.Join(dir, "newdir"), nil, 0o644)
			}
		}
		defer func() { testHook = nil }()
		_, err := Apply(context.Background(), dir, []byte(twoFiles), Options{Strip: DetectStrip})
		if err == nil {
			t.Fatal("applied")
		}
		if _, ok := IsRefused(err); ok {
			t.Errorf("an I/O error reported as a refusal: %v", err)
		}
		must(t, os.Remove(filepath.Join(dir, "newdir")))
		if !sameSnapshot(before, snapshot(t, dir)) {
			t.Errorf("tree changed: %v", snapshot(t, dir))
		}
	})
	t.Run("second file fails at commit", func(t *testing.T) {
		dir := twoFileTree(t)
		before := snapshot(t, dir)
		testHook = func(phase, p string) {
			if phase == "commit" && p == "sub/two.txt" { // turn it into a link under our feet
				os.Remove(filepath.Join(dir, p))
				os.Symlink("../one.txt", filepath.Join(dir, p))
			}
		}
		defer func() { testHook = nil }()
		_, err := Apply(context.Background(), dir, []byte(twoFiles), Options{Strip: DetectStrip})
		if err == nil || !strings.Contains(err.Error(), "restored") {
			t.Fatalf("err = %v", err)
		}
		// Put back what the hook broke, then everything must be as before.
		os.Remove(filepath.Join(dir, "sub", "two.txt"))
		must(t, os.WriteFile(filepath.Join(dir, "sub", "two.txt"), []byte("c\nd\n"), 0o600))
		if !sameSnapshot(before, snapshot(t, dir)) {
			t.Errorf("tree changed: %v", snapshot(t, dir))
		}
	})
	t.Run("interrupted between files", func(t *testing.T) {
		dir := twoFileTree(t)
		before := snapshot(t, dir)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n := 0
		testHook = func(phase, _ string) {
			if phase != "commit" {
				return
			}
			if n++; n == 2 {
				cancel() // Ctrl-C after the first file is in place
			}
		}
		defer func() { testHook = nil }()
		_, err := Apply(ctx, dir, []byte(twoFiles), Options{Strip: DetectStrip})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		if !sameSnapshot(before, snapshot(t, dir)) {
			t.Errorf("tree changed: %v", snapshot(t, dir))
		}
	})
	t.Run("cancelled before writing", func(t *testing.T) {
		dir := twoFileTree(t)
		before := snapshot(t, dir)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := Apply(ctx, dir, []byte(twoFiles), Options{Strip: DetectStrip}); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		if !sameSnapshot(before, snapshot(t, dir)) {
			t.Error("tree changed")
		}
	})
}

// TestBackupAndRollback: an apply keeps a backup that Rollback turns back
// into the tree as it was, created files and directories gone, modes kept.
func TestBackupAndRollback(t *testing.T) {
	dir := twoFileTree(t)
	diff := twoFiles + "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
	must(t, os.WriteFile(filepath.Join(dir, "gone.txt"), []byte("bye\n"), 0o644))
	before := snapshot(t, dir)
	res, err := Apply(context.Background(), dir, []byte(diff), Options{Strip: DetectStrip, BackupID: "run-1/apply-1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.BackupDir != ".runner/backups/run-1/apply-1" {
		t.Fatalf("backup dir %q", res.BackupDir)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, res.BackupDir, "sub", "two.txt")); string(b) != "c\nd\n" {
		t.Errorf("backup of sub/two.txt = %q", b)
	}
	fi, err := os.Stat(filepath.Join(dir, "one.txt"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("mode after apply = %v, %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "newdir", "three.txt")); string(b) != "new\n" {
		t.Errorf("created file = %q", b)
	}
	// The same id again gets its own directory.
	res2, err := Apply(context.Background(), dir, []byte(diff), Options{Strip: DetectStrip, BackupID: "run-1/apply-1", Reverse: true})
	if err != nil {
		t.Fatal(err)
	}
	if res2.BackupDir != ".runner/backups/run-1/apply-1-2" {
		t.Errorf("second backup dir %q", res2.BackupDir)
	}
	if err := Rollback(dir, res2.BackupDir); err != nil {
		t.Fatal(err)
	}
	if err := Rollback(dir, filepath.Join(dir, res.BackupDir)); err != nil { // absolute works too
		t.Fatal(err)
	}
	after := snapshot(t, dir)
	for k := range after {
		if strings.HasPrefix(k, ".runner") {
			delete(after, k)
		}
	}
	if !sameSnapshot(before, after) {
		t.Errorf("after rollback:\n%v\nwant\n%v", after, before)
	}
}

// TestFewOpenDirectories runs the tree tests with room for only two open
// directories, so that the path-walking fallback is used too.
func TestFewOpenDirectories(t *testing.T) {
	defer func(n int) { maxOpenDirs = n }(maxOpenDirs)
	maxOpenDirs = 2
	t.Run("unsafe", TestUnsafePaths)
	t.Run("all or nothing", TestAllOrNothing)
	t.Run("rollback", TestBackupAndRollback)
	runApplyCases(t, []applyCase{{name: "deep", tree: map[string]string{"a/b/c/d.txt": "x\n", "a/e/f.txt": "y\n"},
		want: map[string]string{"a/b/c/d.txt": "X\n", "a/e/f.txt": "Y\n", "a/n/m/new.txt": "z\n"},
		diff: "--- a/a/b/c/d.txt\n+++ b/a/b/c/d.txt\n@@ -1 +1 @@\n-x\n+X\n--- a/a/e/f.txt\n+++ b/a/e/f.txt\n@@ -1 +1 @@\n-y\n+Y\n--- /dev/null\n+++ b/a/n/m/new.txt\n@@ -0,0 +1 @@\n+z\n"}})
}

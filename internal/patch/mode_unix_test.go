//go:build unix

package patch

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestModesUnderAnyUmask: a changed file keeps its mode, a new file gets
// the diff's, and a rollback puts the old mode back, whatever the umask.
// New contents are made with their mode at once when the umask leaves it
// whole, and given it with fchmod otherwise (writeFast): this checks both
// ways, for modes the umask strips and modes it does not.
func TestModesUnderAnyUmask(t *testing.T) {
	umasks := []int{0o022, 0o077, 0o002, 0o000, 0o027}
	modes := []fs.FileMode{0o644, 0o755, 0o600, 0o640, 0o666, 0o777, 0o444, 0o700}
	for _, um := range umasks {
		for _, m := range modes {
			t.Run(fmt.Sprintf("umask %03o mode %04o", um, m), func(t *testing.T) {
				old := syscall.Umask(um)
				defer syscall.Umask(old)
				dir := t.TempDir()
				f := filepath.Join(dir, "f.txt")
				g := filepath.Join(dir, "g.sh")
				for _, p := range []string{f, g} {
					if err := os.WriteFile(p, []byte("a\nb\n"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Chmod(f, m); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(g, 0o644); err != nil {
					t.Fatal(err)
				}
				diff := "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n" +
					"diff --git a/g.sh b/g.sh\nold mode 100644\nnew mode 100755\n" +
					"diff --git a/x.sh b/x.sh\nnew file mode 100755\n--- /dev/null\n+++ b/x.sh\n@@ -0,0 +1 @@\n+x\n" +
					"diff --git a/y.txt b/y.txt\nnew file mode 100644\n--- /dev/null\n+++ b/y.txt\n@@ -0,0 +1 @@\n+y\n"
				res, err := Apply(context.Background(), dir, []byte(diff), Options{Strip: 1})
				if err != nil {
					t.Fatal(err)
				}
				want := map[string]fs.FileMode{"f.txt": m, "g.sh": 0o755, "x.sh": 0o755, "y.txt": 0o644}
				for name, w := range want {
					fi, err := os.Lstat(filepath.Join(dir, name))
					if err != nil {
						t.Fatal(err)
					}
					if fi.Mode().Perm() != w {
						t.Errorf("after the apply %s is %04o, want %04o", name, fi.Mode().Perm(), w)
					}
				}
				if b, _ := os.ReadFile(f); string(b) != "a\nB\n" {
					t.Errorf("f.txt = %q", b)
				}
				if err := Rollback(dir, res.BackupDir); err != nil {
					t.Fatal(err)
				}
				for name, w := range map[string]fs.FileMode{"f.txt": m, "g.sh": 0o644} {
					fi, err := os.Lstat(filepath.Join(dir, name))
					if err != nil {
						t.Fatal(err)
					}
					if fi.Mode().Perm() != w {
						t.Errorf("after the rollback %s is %04o, want %04o", name, fi.Mode().Perm(), w)
					}
				}
			})
		}
	}
}

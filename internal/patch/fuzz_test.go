package patch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	"--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n",
	"```diff\n--- a.txt\n+++ a.txt\n@@ ... @@\n one\n-two\n+2\n```\nthanks\n",
	"diff --git a/b/c.txt b/b/c.txt\nindex 1..2 100644\n--- a/b/c.txt\n+++ b/b/c.txt\n@@ -1 +1,2 @@\n x\n+y\n\\ No newline at end of file\n",
	"--- /dev/null\n+++ b/new/file.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n",
	"--- a/a.txt\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-one\n-two\n-three\n",
	"--- a/../outside/secret\n+++ b/../outside/secret\n@@ -1 +1 @@\n-secret\n+pwned\n",
	"--- a/lnk/secret\n+++ b/lnk/secret\n@@ -1 +1 @@\n-secret\n+pwned\n",
	"--- a/inlink\n+++ b/inlink\n@@ -1 +1 @@\n-one\n+1\n",
	"--- \"a/sp ace\"\n+++ \"b/sp ace\"\n@@ -1 +1 @@\n-\\303\n+x\n",
	"--- a/a.txt\r\n+++ b/a.txt\r\n@@ -1,2 +1,2 @@\r\n one\r\n-two\r\n+2\r\n",
	"--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n\n-two\n+2\nprose after\n- a bullet\n",
	"@@ -1 +1 @@\n-x\n+y\n",
	"diff --git a/x b/y\nrename from x\nrename to y\n",
	"--- a/a.txt\n+++ b/a.txt\n@@@ -1 -1 +1 @@@\n",
	"--- a/a.txt\n+++ b/a.txt\n@@ -99999999999,1 +1 @@\n-one\n+1\n",
}

// FuzzParse: the front end never panics, and what it accepts is sound.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fds, _, err := parse(data, 1000)
		if err != nil {
			if _, ok := IsRefused(err); !ok {
				t.Fatalf("parse error is not a refusal: %v", err)
			}
			return
		}
		for _, fd := range fds {
			if len(fd.hunks) == 0 {
				t.Fatalf("file %q without hunks", fd.newName)
			}
			for _, h := range fd.hunks {
				changes := 0
				for _, o := range h.ops {
					switch o.kind {
					case '-', '+':
						changes++
					case ' ':
					default:
						t.Fatalf("bad op %q", o.kind)
					}
					if strings.ContainsAny(h.text(o), "\n") {
						t.Fatalf("line with a newline: %q", h.text(o))
					}
				}
				if changes == 0 {
					t.Fatalf("hunk without changes")
				}
			}
		}
	})
}

// FuzzApply: applying anything to a small tree never panics and never
// touches anything outside the directory, links or not.
func FuzzApply(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add([]byte(s), uint8(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, flags uint8) {
		top := t.TempDir()
		dir, outside := filepath.Join(top, "work"), filepath.Join(top, "outside")
		for _, d := range []string{filepath.Join(dir, "b"), outside} {
			must(t, os.MkdirAll(d, 0o755))
		}
		must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("secret\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "b", "c.txt"), []byte("x\n"), 0o644))
		must(t, os.Symlink(outside, filepath.Join(dir, "lnk")))
		must(t, os.Symlink("a.txt", filepath.Join(dir, "inlink")))
		before := snapshot(t, outside)

		opt := Options{Strip: DetectStrip, Reverse: flags&1 != 0, Check: flags&2 != 0, NoBackup: flags&4 != 0, MaxHunks: 200}
		if flags&8 != 0 {
			opt.Strip = int(flags>>4) % 3
		}
		res, err := Apply(context.Background(), dir, data, opt)
		if err == nil && res == nil {
			t.Fatal("nil result without an error")
		}
		if !sameSnapshot(before, snapshot(t, outside)) {
			t.Fatalf("wrote outside the directory: %v", snapshot(t, outside))
		}
		entries, _ := os.ReadDir(top)
		if len(entries) != 2 {
			t.Fatalf("made something beside the directory: %v", entries)
		}
		for _, l := range []string{"lnk", "inlink"} {
			if fi, err := os.Lstat(filepath.Join(dir, l)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("link %s replaced or removed", l)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil && string(b) != "one\ntwo\nthree\n" {
			t.Fatalf("refused but a.txt changed: %q (%v)", b, err)
		}
	})
}

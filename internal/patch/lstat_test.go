//go:build unix

package patch

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// TestTreeLstat: what tree.lstat says of each kind of path, the same as
// os.Lstat says (size, permissions, names), or the refusal.
func TestTreeLstat(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string][]byte{"d/f.txt": []byte("hello\n"), "d/x.sh": []byte("#!/bin/sh\n"), "top": []byte("t")})
	if err := os.Chmod(filepath.Join(dir, "d/x.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "d/f.txt"), filepath.Join(dir, "d/f2.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f.txt", filepath.Join(dir, "d/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "d/fifo"), 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tr := newTree(root)
	defer tr.close()
	cases := []struct {
		path    string
		exists  bool
		refused bool
		missing string
	}{
		{path: "d/f.txt", exists: true},
		{path: "d/f2.txt", exists: true},
		{path: "d/x.sh", exists: true},
		{path: "top", exists: true},
		{path: "d/none"},
		{path: "none/f", missing: "none"},
		{path: "d/link", refused: true},
		{path: "d/sub", refused: true},
		{path: "d/fifo", refused: true},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			fi, missing, err := tr.lstat(tc.path)
			if _, refused := IsRefused(err); refused != tc.refused {
				t.Fatalf("lstat: %v, want refused: %v", err, tc.refused)
			}
			if tc.refused {
				return
			}
			if err != nil || (fi != nil) != tc.exists || missing != tc.missing {
				t.Fatalf("lstat = %v, %q, %v; want exists %v, missing %q", fi, missing, err, tc.exists, tc.missing)
			}
			if !tc.exists {
				return
			}
			want, err := os.Lstat(filepath.Join(dir, tc.path))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() != want.Size() || fi.Mode() != want.Mode() || fi.Name() != want.Name() || fi.IsDir() || links(fi) != links(want) || !fi.ModTime().Equal(want.ModTime()) {
				t.Errorf("lstat = %v %v %q %d links %v; os.Lstat: %v %v %q %d links %v",
					fi.Size(), fi.Mode(), fi.Name(), links(fi), fi.ModTime(), want.Size(), want.Mode(), want.Name(), links(want), want.ModTime())
			}
		})
	}
}

// TestTreeLstatAllocations: looking at a file in a directory the tree
// holds is one stat(2) on the directory's handle, with the file's name
// and its result the only allocations. os.Root.Lstat makes four
// (three calls per file written: a tenth of an apply's allocations).
func TestTreeLstatAllocations(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the one-call lstat is Linux's (lstat_linux.go)")
	}
	dir := t.TempDir()
	writeTree(t, dir, map[string][]byte{"a/b/f.go": []byte("package f\n")})
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tr := newTree(root)
	defer tr.close()
	var fi fs.FileInfo
	allocs := testing.AllocsPerRun(100, func() {
		if fi, _, err = tr.lstat("a/b/f.go"); err != nil || fi == nil {
			t.Fatalf("lstat: %v, %v", fi, err)
		}
	})
	if allocs > 2 {
		t.Errorf("tree.lstat of a file in a held directory allocates %v times, want at most 2", allocs)
	}
}

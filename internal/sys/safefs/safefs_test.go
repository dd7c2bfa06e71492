package safefs

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The operations runner uses on its files, each meeting what a step
// could plant at the name: the file a link points at is never touched,
// and what cannot be acted on is an error naming the file and what was
// there.
func TestPlanted(t *testing.T) {
	ops := []struct {
		name string
		op   func(dir, path string) error
		// after: what is at path afterwards, for a link planted there
		// ("" when it is an error).
		afterLink string
	}{
		{"OpenFile with O_TRUNC", func(dir, path string) error {
			f, err := OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
			if err == nil {
				f.Close()
			}
			return err
		}, ""},
		{"WriteFile", func(dir, path string) error {
			return WriteFileBytes(path, []byte("runner's"), 0o600)
		}, "runner's"},
		{"Replace", func(dir, path string) error {
			return Replace(path, []byte("runner's"), 0o600)
		}, "runner's"},
		{"Rename", func(dir, path string) error {
			src := filepath.Join(dir, "src")
			os.WriteFile(src, []byte("runner's"), 0o600)
			return Rename(src, path)
		}, "runner's"},
		{"Remove", func(dir, path string) error { return Remove(path) }, "gone"},
	}
	plants := []struct {
		name, says string
		plant      func(path, outside string) error
	}{
		{"symlink", "a symbolic link to ", func(path, outside string) error { return os.Symlink(outside, path) }},
		{"directory", "a directory", func(path, _ string) error { return os.Mkdir(path, 0o700) }},
		{"FIFO", "a named pipe", func(path, _ string) error { return syscall.Mkfifo(path, 0o600) }},
	}
	for _, o := range ops {
		for _, p := range plants {
			t.Run(o.name+"/"+p.name, func(t *testing.T) {
				dir := t.TempDir()
				outside := filepath.Join(t.TempDir(), "outside")
				os.WriteFile(outside, []byte("outside"), 0o644)
				path := filepath.Join(dir, "file")
				if err := p.plant(path, outside); err != nil {
					t.Fatal(err)
				}
				err := o.op(dir, path)
				if data, _ := os.ReadFile(outside); string(data) != "outside" {
					t.Errorf("the file outside was written: %q", data)
				}
				replaced := o.afterLink != "" && p.name != "directory"
				switch {
				case replaced && err != nil:
					t.Errorf("%v: want the %s replaced", err, p.name)
				case replaced && o.afterLink == "gone":
					if _, err := os.Lstat(path); !os.IsNotExist(err) {
						t.Errorf("%s still there: %v", p.name, err)
					}
				case replaced:
					if data, err := os.ReadFile(path); err != nil || string(data) != o.afterLink {
						t.Errorf("%s holds %q, %v; want %q", path, data, err, o.afterLink)
					}
				case err == nil:
					t.Errorf("no error with a %s at %s", p.name, path)
				case !strings.Contains(err.Error(), path+": found "+p.says):
					t.Errorf("error %q: want it to name %s and say %q", err, path, p.says)
				}
			})
		}
	}
}

// MkdirAll makes what is missing below base and follows no link there:
// what a step planted is an error naming it, and nothing is made where
// it points. With base "" only what it makes is walked so.
func TestMkdirAll(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plant  func(base, outside string) // before MkdirAll
		base   bool                       // base is the workdir; false: ""
		path   string
		want   string // error text; "" for success
		inside bool   // path is a directory afterwards
	}{
		{"made", nil, true, "a/b/c", "", true},
		{"existing", func(b, o string) { os.MkdirAll(filepath.Join(b, "a/b"), 0o755) }, true, "a/b", "", true},
		{"the workdir itself", nil, true, ".", "", true},
		{"a link above", func(b, o string) { os.Symlink(o, filepath.Join(b, "a")) }, true, "a/b", "a: found a symbolic link to OUT there, where runner makes a directory", false},
		{"a link at the end", func(b, o string) { os.Symlink(o, filepath.Join(b, "a")) }, true, "a", "a: found a symbolic link to OUT there", false},
		{"a file above", func(b, o string) { os.WriteFile(filepath.Join(b, "a"), nil, 0o644) }, true, "a/b", "a: found a regular file there", false},
		{"no base: made", nil, false, "a/b", "", true},
		{"no base: an existing link above is the user's", func(b, o string) { os.Symlink(o, filepath.Join(b, "a")) }, false, "a/b", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work, outside := t.TempDir(), t.TempDir()
			if tc.plant != nil {
				tc.plant(work, outside)
			}
			base := ""
			if tc.base {
				base = work
			}
			err := MkdirAll(base, filepath.Join(work, tc.path), 0o755)
			want := strings.ReplaceAll(tc.want, "OUT", outside)
			switch {
			case want == "" && err != nil:
				t.Fatalf("got %v", err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), filepath.Join(work, "")+"/"+want)):
				t.Fatalf("got %v, want %q", err, want)
			}
			if fi, err := os.Stat(filepath.Join(work, tc.path)); tc.inside && (err != nil || !fi.IsDir()) {
				t.Errorf("%s is not a directory afterwards: %v", tc.path, err)
			}
			if ents, _ := os.ReadDir(outside); tc.base && len(ents) != 0 {
				t.Errorf("made through the link: %v", ents)
			}
		})
	}
}

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

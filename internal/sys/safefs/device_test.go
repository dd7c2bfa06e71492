package safefs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// nullDevice makes a character device like /dev/null in a test's own
// directory (only root may), so no test ever writes near the real one.
func nullDevice(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making a device node takes root")
	}
	p := filepath.Join(t.TempDir(), "null")
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skipf("mknod: %v (a container without the capability)", err)
	}
	return p
}

func isDevice(t *testing.T, p string) bool {
	t.Helper()
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func write(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// A device is never replaced by a file of runner's: as root, a rename over
// /dev/null would break it for every program on the machine.
func TestDeviceNeverReplaced(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   func(p string) error
	}{
		{"WriteFile", func(p string) error { return WriteFile(p, 0o600, write("x")) }},
		{"Replace", func(p string) error { return Replace(p, []byte("x"), 0o600) }},
		{"WriteFileBytes", func(p string) error { return WriteFileBytes(p, []byte("x"), 0o600) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := nullDevice(t)
			err := tc.op(p)
			var fe *FoundError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), "a device") {
				t.Errorf("err = %v, want a FoundError naming a device", err)
			}
			if !isDevice(t, p) {
				t.Fatal("the device was replaced")
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(p), ".null.tmp-*")); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

// A file a person named is written as a shell's redirection would: through
// a device or a named pipe (links followed), replaced when a regular file.
func TestWriteOutput(t *testing.T) {
	t.Run("device", func(t *testing.T) {
		p := nullDevice(t)
		link := filepath.Join(filepath.Dir(p), "stdout")
		if err := os.Symlink(p, link); err != nil {
			t.Fatal(err)
		}
		for _, target := range []string{p, link} {
			if err := WriteOutput(target, 0o600, write("report")); err != nil {
				t.Fatalf("%s: %v", target, err)
			}
		}
		if !isDevice(t, p) {
			t.Fatal("the device was replaced")
		}
	})
	t.Run("named pipe", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "pipe")
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() {
			b, _ := os.ReadFile(p)
			got <- string(b)
		}()
		if err := WriteOutput(p, 0o600, write("through the pipe")); err != nil {
			t.Fatal(err)
		}
		if s := <-got; s != "through the pipe" {
			t.Errorf("the reader got %q", s)
		}
		if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("the pipe was replaced: %v %v", fi.Mode(), err)
		}
	})
	t.Run("regular file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "junit.xml")
		if err := os.WriteFile(p, []byte("old and longer"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := WriteOutput(p, 0o600, write("new")); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != "new" {
			t.Errorf("file holds %q", b)
		}
	})
}

//go:build unix

package liveboard

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// A board's socket is the user's alone (0600) from the first moment it
// exists, even in a directory others may enter and under umask 000: a
// goroutine watching for the path sees no other mode, not even in the
// instant after it is made.
func TestSocketPrivateFromItsFirstMoment(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	b, err := board.Create(filepath.Join(dir, "blackboard.json"), board.Run{ID: "r1", Status: board.StatusRunning}, board.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := range 200 {
		sock := filepath.Join(dir, "b.sock")
		started, seen := make(chan struct{}), make(chan os.FileMode, 1)
		go func() {
			close(started)
			for {
				if fi, err := os.Lstat(sock); err == nil {
					seen <- fi.Mode()
					return
				}
			}
		}()
		<-started
		s, err := ServeSource(&boardSource{b: b}, sock)
		if err != nil {
			t.Fatal(err)
		}
		mode := <-seen
		s.Close()
		if mode.Type() != os.ModeSocket || mode.Perm() != 0o600 {
			t.Fatalf("try %d: the socket was first seen as %v, want a socket 0600", i, mode)
		}
		if _, err := os.Lstat(sock); !os.IsNotExist(err) {
			t.Fatalf("try %d: the socket is still there after Close (%v)", i, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left in the directory: %v, want only the board", ents)
	}
}

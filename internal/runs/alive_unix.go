//go:build unix

package runs

import (
	"errors"
	"syscall"

	"github.com/planrunner/runner/internal/board/boardlock"
)

// processAlive reports whether a process with this pid exists.
func processAlive(pid int) bool {
	if pid <= 0 {
		return true // unknown: assume the worst
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// lockHeld says whether a process holds the run's lock now.
func lockHeld(path string) bool { return boardlock.Held(path) }

//go:build unix

package safefs

import (
	"os"
	"syscall"
)

// Flock waits for an exclusive OS lock on f; the kernel drops it when
// its holder dies, so a crashed process never leaves it held.
func Flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

// Unflock releases the lock Flock took.
func Unflock(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

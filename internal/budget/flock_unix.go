//go:build unix

package budget

import (
	"os"
	"syscall"
)

// flock waits for an exclusive OS lock on f (the ledger.s lock file);
// the kernel drops it when its holder dies.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unflock(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

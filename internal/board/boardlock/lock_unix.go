//go:build unix

package boardlock

import (
	"os"
	"syscall"
)

var errWouldBlock error = syscall.EWOULDBLOCK

func tryFlock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

func unFlock(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

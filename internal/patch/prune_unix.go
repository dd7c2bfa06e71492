//go:build unix

package patch

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockDir opens directory p and takes a lock on it: shared (a backup in
// use: being written, kept for a rollback, read by an undo) or exclusive
// (a backup about to be pruned). wait false gives up at once when the
// lock is held elsewhere. The lock lasts until the returned file is
// closed, or the process ends.
func lockDir(root *os.Root, p string, exclusive, wait bool) (*os.File, error) {
	f, err := root.Open(p)
	if err != nil {
		return nil, err
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if !wait {
		how |= unix.LOCK_NB
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

var errWouldBlock error = unix.EWOULDBLOCK

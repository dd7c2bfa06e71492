//go:build !unix

package patch

import (
	"errors"
	"os"
)

// lockDir opens directory p; there is no lock to take here, so a backup
// in use by an apply still running elsewhere could be pruned.
func lockDir(root *os.Root, p string, exclusive, wait bool) (*os.File, error) {
	return root.Open(p)
}

var errWouldBlock = errors.New("would block")

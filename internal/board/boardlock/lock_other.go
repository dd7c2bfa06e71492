//go:build !unix

package boardlock

import (
	"errors"
	"os"
)

// Without flock (Windows), ownership is not enforced: one process per run.
var errWouldBlock = errors.New("would block")

func tryFlock(f *os.File) error { return nil }

func unFlock(f *os.File) {}

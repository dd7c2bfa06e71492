//go:build !unix

package safefs

import "os"

// Flock cannot lock here: it returns at once. Callers say what that
// costs them.
func Flock(f *os.File) error { return nil }

// Unflock releases the lock Flock took.
func Unflock(f *os.File) {}

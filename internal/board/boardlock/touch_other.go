//go:build !linux

package boardlock

import (
	"os"
	"path/filepath"
	"time"
)

// Touch marks the folder holding path as changed, after path was written
// in place: its change time (where the system has one) and modification
// time move on, as they do when a file in it is made, renamed or
// removed, so a stat of a run's folder says whether anything in the run
// changed since.
func Touch(path string) error {
	now := time.Now()
	return os.Chtimes(filepath.Dir(path), now, now)
}

//go:build linux

package boardlock

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Touch marks the folder holding path as changed, after path was written
// in place: its change time (ctime) moves on, as it does by itself when a
// file in it is made, renamed or removed. So one stat of a run's folder
// says whether anything in the run changed since (the run index keys on
// it); a file appended to or rewritten in place changes only its own
// times.
func Touch(path string) error {
	now := []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
	return unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Dir(path), now, unix.AT_SYMLINK_NOFOLLOW)
}

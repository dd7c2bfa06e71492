//go:build unix

package liveboard

import (
	"os"
	"syscall"
)

// privateDir reports whether dir is this user's and closed to everyone
// else (no group or other permission bits).
func privateDir(dir string) bool {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

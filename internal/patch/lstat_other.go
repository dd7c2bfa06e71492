//go:build !linux

package patch

import (
	"io/fs"
	"os"
)

// lstatIn is r.Lstat(name) for p (see lstat_linux.go).
func (t *tree) lstatIn(p string, r *os.Root, name string) (fs.FileInfo, error) {
	return r.Lstat(name)
}

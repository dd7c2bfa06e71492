//go:build linux

package patch

import (
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lstatIn is r.Lstat(name) for p, name being p's last component and r
// its directory's Root: one fstatat(2) on the directory's handle. An
// apply asks three times per file (planning, the backup's link, the
// check before the rename), and os.Root.Lstat splits and copies the
// name and allocates four times per call: a tenth of all an apply
// allocated.
func (t *tree) lstatIn(p string, r *os.Root, name string) (fs.FileInfo, error) {
	d, base := split(p)
	if base != name { // too many directories open: r is the top, name p
		return r.Lstat(name)
	}
	df, ok, err := t.dirFD(d)
	if err != nil || !ok {
		return r.Lstat(name)
	}
	s := &statInfo{name: name}
	for {
		err = unix.Fstatat(int(df), name, &s.st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "lstatat", Path: name, Err: err}
	}
	return s, nil
}

// statInfo is an fs.FileInfo made from a stat(2) result, as os makes it.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s *statInfo) Name() string       { return s.name }
func (s *statInfo) Size() int64        { return s.st.Size }
func (s *statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s *statInfo) Sys() any           { return &s.st }
func (s *statInfo) nlinks() int        { return int(s.st.Nlink) }
func (s *statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }

func (s *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if s.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

//go:build unix

package safefs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// dir is an open directory: every name is looked up in it with openat and
// friends, the last component never followed.
type dir struct {
	fd   int
	path string
}

// links is the number of names of the file fi describes.
func links(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

func openDir(path string) (*dir, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &dir{fd: fd, path: path}, nil
}

func (d *dir) close() { unix.Close(d.fd) }

// retry runs f again while it is interrupted by a signal.
func retry(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

// found is the error for a name that is not a regular file: what is
// there, looked at without following it; err when nothing odd is.
func (d *dir) found(name, path string, err error) error {
	var st unix.Stat_t
	if unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		if what := kind(d, name, &st); what != "" {
			return &FoundError{Path: path, Found: what}
		}
	}
	return err
}

// kind names what st is when it is not a regular file with one name; ""
// when it is.
func kind(d *dir, name string, st *unix.Stat_t) string {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if st.Nlink > 1 {
			return fmt.Sprintf("a file with %d names (a hard link)", st.Nlink)
		}
		return ""
	case unix.S_IFLNK:
		buf := make([]byte, 4096)
		if n, err := unix.Readlinkat(d.fd, name, buf); err == nil {
			return "a symbolic link to " + string(buf[:n])
		}
		return "a symbolic link"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a named pipe (FIFO)"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	}
	return "a special file"
}

func (d *dir) openFile(name, path string, flag int, perm os.FileMode) (*os.File, error) {
	trunc := flag&os.O_TRUNC != 0
	// O_NOFOLLOW: a link at name is an error (ELOOP), never followed.
	// O_NONBLOCK: a FIFO fails (ENXIO) or opens at once, never waits for
	// a reader; it is refused below. O_TRUNC waits for that check.
	fl := flag&^os.O_TRUNC | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Openat(d.fd, name, fl, uint32(perm.Perm()))
		return err
	})
	if err != nil {
		return nil, d.found(name, path, &os.PathError{Op: "open", Path: path, Err: err})
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if what := kind(d, name, &st); what != "" {
		unix.Close(fd)
		return nil, &FoundError{Path: path, Found: what}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: path, Err: err}
	}
	if trunc {
		if err := unix.Ftruncate(fd, 0); err != nil {
			unix.Close(fd)
			return nil, &os.PathError{Op: "truncate", Path: path, Err: err}
		}
	}
	return os.NewFile(uintptr(fd), path), nil
}

func (d *dir) writeFile(name, path string, perm os.FileMode, durable bool, write func(io.Writer) error) error {
	var (
		tmp string
		fd  int
		err error
	)
	for range 100 {
		var r [6]byte
		rand.Read(r[:])
		tmp = "." + name + ".tmp-" + hex.EncodeToString(r[:])
		err = retry(func() (err error) {
			fd, err = unix.Openat(d.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
			return err
		})
		if err != unix.EEXIST {
			break
		}
	}
	if err != nil {
		return &os.PathError{Op: "create", Path: filepath.Join(d.path, tmp), Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(d.path, tmp))
	fail := func(err error) error {
		f.Close()
		unix.Unlinkat(d.fd, tmp, 0)
		return err
	}
	if err := write(f); err != nil {
		return fail(err)
	}
	if err := f.Chmod(perm); err != nil {
		return fail(err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			return fail(err)
		}
	}
	if err := f.Close(); err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		return err
	}
	// A device is never replaced: as root, a rename over /dev/null would
	// destroy it for every program on the machine.
	var st unix.Stat_t
	if unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		if m := st.Mode & unix.S_IFMT; m == unix.S_IFCHR || m == unix.S_IFBLK {
			unix.Unlinkat(d.fd, tmp, 0)
			return &FoundError{Path: path, Found: "a device"}
		}
	}
	if err := rename(d, tmp, d, name, f.Name(), path); err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		return err
	}
	if durable {
		unix.Fsync(d.fd) // best effort: some file systems refuse fsync on directories
	}
	return nil
}

func (d *dir) remove(name, path string) error {
	err := retry(func() error { return unix.Unlinkat(d.fd, name, 0) })
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
		// Linux says EISDIR, others EPERM, for a directory.
		return d.found(name, path, &os.PathError{Op: "remove", Path: path, Err: err})
	}
	return &os.PathError{Op: "remove", Path: path, Err: err}
}

// rename never follows a link at either name; a directory at the new
// name is an error saying so.
func rename(od *dir, oname string, nd *dir, nname, opath, npath string) error {
	err := retry(func() error { return unix.Renameat(od.fd, oname, nd.fd, nname) })
	if err == nil {
		return nil
	}
	return nd.found(nname, npath, &os.LinkError{Op: "rename", Old: opath, New: npath, Err: err})
}

// mkdirAll walks names below base, each opened without following a link,
// and makes those that are missing.
func mkdirAll(base string, names []string, perm os.FileMode) error {
	d, err := openDir(base)
	if err != nil {
		return err
	}
	defer func() { d.close() }()
	for _, name := range names {
		path := filepath.Join(d.path, name)
		open := func() (fd int, err error) {
			err = retry(func() (err error) {
				fd, err = unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				return err
			})
			return fd, err
		}
		fd, err := open()
		if err == unix.ENOENT {
			if err := retry(func() error { return unix.Mkdirat(d.fd, name, uint32(perm.Perm())) }); err != nil && err != unix.EEXIST {
				return &os.PathError{Op: "mkdir", Path: path, Err: err}
			}
			fd, err = open()
		}
		if err != nil {
			var st unix.Stat_t
			if unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
				what := kind(d, name, &st)
				if what == "" {
					what = "a regular file"
				}
				return &FoundError{Path: path, Found: what, Dir: true}
			}
			return &os.PathError{Op: "open", Path: path, Err: err}
		}
		d.close()
		d = &dir{fd: fd, path: path}
	}
	return nil
}

// ChownDir gives the directory at path to uid and gid, through an fd on
// it: a symbolic link at its name is an error, never followed.
func ChownDir(path string, uid, gid int) error {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return &os.PathError{Op: "chown", Path: path, Err: err}
	}
	return nil
}

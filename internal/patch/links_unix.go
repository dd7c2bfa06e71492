//go:build unix

package patch

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// dirBudget is how many directories a tree may keep open (two
// descriptors each): a quarter of the descriptor limit, at most 4096.
func dirBudget() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur < 64 {
		return 16
	}
	return int(min(r.Cur/8, 4096))
}

// links is how many names the file has; 0 when unknown.
func links(fi fs.FileInfo) int {
	if s, ok := fi.(interface{ nlinks() int }); ok { // lstatIn's (Linux)
		return s.nlinks()
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Nlink)
	}
	return 0
}

// link makes newp a second name of oldp: one linkat between the two
// directories, which os.Root.Link would reach by walking both paths.
func (t *tree) link(oldp, newp string) error {
	od, ob := split(oldp)
	nd, nb := split(newp)
	of, ok, err := t.dirFD(od)
	if err != nil || !ok {
		return t.root.Link(oldp, newp)
	}
	nf, ok, err := t.dirFD(nd)
	if err != nil || !ok {
		return t.root.Link(oldp, newp)
	}
	return unix.Linkat(int(of), ob, int(nf), nb, 0)
}

// The two calls below read and write a file with one openat(2) on its
// directory's handle and plain read/write calls: os.Root and os.File add a
// path walk, a poller registration and a stat per file, which over
// thousands of files cost more than the reading and writing. ok is false
// when the directory has no handle (too many open): the caller then goes
// the os.Root way.

// readFast reads p (size bytes expected) without following a link.
func (t *tree) readFast(p string, size int64) (_ []byte, ok bool, _ error) {
	d, name := split(p)
	df, ok, err := t.dirFD(d)
	if err != nil || !ok {
		return nil, false, nil
	}
	// O_NONBLOCK: a FIFO put in the file's place cannot hang the open.
	fd, err := unix.Openat(int(df), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, true, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	b := getBuf(size)
	n := 0
	for {
		if n == len(b) {
			// Full: one more read says whether the file ends here.
			if cap(b) == len(b) {
				b = append(b, 0)[:len(b)]
			}
			b = b[:cap(b)]
		}
		m, err := unix.Read(fd, b[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, true, &fs.PathError{Op: "read", Path: p, Err: err}
		}
		if m == 0 {
			return b[:n], true, nil
		}
		n += m
	}
}

// writeFast writes data to the new file p with mode, synced if sync.
func (t *tree) writeFast(p string, data []byte, mode fs.FileMode, sync bool) (ok bool, _ error) {
	d, name := split(p)
	df, ok, err := t.dirFD(d)
	if err != nil || !ok {
		return false, nil
	}
	dfd := int(df)
	// Made with its mode when the umask leaves that mode whole (the usual
	// case: 0644 or 0755 under umask 022), which spares an fchmod per
	// file; otherwise made private and given its mode after.
	perm, chmod := uint32(0o600), true
	if u := unixMode(mode); u == uint32(mode.Perm()) && t.umask >= 0 && u&uint32(t.umask) == 0 {
		perm, chmod = u, false
	}
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return true, &fs.PathError{Op: "create", Path: p, Err: err}
	}
	for len(data) > 0 && err == nil {
		var m int
		m, err = unix.Write(fd, data)
		if err == unix.EINTR {
			err = nil
		}
		data = data[m:]
	}
	if err == nil && chmod {
		err = unix.Fchmod(fd, unixMode(mode))
	}
	if err == nil && sync {
		err = unix.Fsync(fd)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		_ = unix.Unlinkat(dfd, name, 0)
		return true, &fs.PathError{Op: "write", Path: p, Err: err}
	}
	return true, nil
}

// processUmask is the process's umask as Linux reports it in
// /proc/self/status, or -1 when it cannot be read (then every file is
// given its mode with fchmod). It is read, not set: umask(2) sets it for
// the whole process, and another goroutine creating a file meanwhile
// would get the wrong mode.
func processUmask() int {
	fd, err := unix.Open("/proc/self/status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	defer unix.Close(fd)
	var buf [4096]byte
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || m == 0 {
			break
		}
		n += m
	}
	_, rest, ok := strings.Cut(string(buf[:n]), "\nUmask:")
	if !ok {
		return -1
	}
	line, _, _ := strings.Cut(rest, "\n")
	u, err := strconv.ParseUint(strings.TrimSpace(line), 8, 32)
	if err != nil || u > 0o777 {
		return -1
	}
	return int(u)
}

func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= unix.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		u |= unix.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		u |= unix.S_ISVTX
	}
	return u
}

// lockStaging creates dir's lock file and holds an exclusive lock on it
// for as long as the returned file is open (the process's life at most).
// The file gets its name only once locked: another apply that found
// "lock" between its creation and the flock could take the lock itself,
// judge the directory stale, and remove it under the apply that made it
// (seen with concurrent applies in one directory). Until the rename,
// staleStaging goes by the process in the directory's name.
func lockStaging(root *os.Root, dir string) (*os.File, error) {
	f, err := root.OpenFile(dir+"/lock.new", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	if err := root.Rename(dir+"/lock.new", dir+"/lock"); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// staleStaging reports whether the staging directory p (named name) was
// left by an apply that is gone: its lock can be taken, or, made but not
// yet locked, the process its name gives is dead.
func staleStaging(root *os.Root, p, name string) bool {
	f, err := root.OpenFile(p+"/lock", os.O_RDWR, 0)
	if err != nil {
		pid, _, ok := strings.Cut(name, "-")
		n, perr := strconv.Atoi(pid)
		return ok && perr == nil && n > 0 && unix.Kill(n, 0) == unix.ESRCH
	}
	defer f.Close()
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil
}

// renameAcross moves old to p, which may be in another directory: one
// renameat(2) between the two directories' handles.
func (t *tree) renameAcross(old, p string) error {
	od, ob := split(old)
	nd, nb := split(p)
	of, ok, err := t.dirFD(od)
	if err != nil || !ok {
		return t.root.Rename(old, p)
	}
	nf, ok, err := t.dirFD(nd)
	if err != nil || !ok {
		return t.root.Rename(old, p)
	}
	if err := unix.Renameat(int(of), ob, int(nf), nb); err != nil {
		return &os.LinkError{Op: "rename", Old: old, New: p, Err: err}
	}
	return nil
}

func isCrossDevice(err error) bool { return errors.Is(err, unix.EXDEV) }

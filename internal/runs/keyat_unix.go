//go:build unix

package runs

import (
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/sys/safefs"
)

// keyOfStat is the key of a run's folder: its inode, change time (the
// stamp), modification time, size, links and device. Every change to a
// run changes its folder's change time: its files are made, renamed and
// removed there, and one written in place touches it (boardlock.Touch).
func keyOfStat(st *unix.Stat_t) fileKey {
	return fileKey{int64(st.Ino), unix.TimespecToNsec(st.Ctim), unix.TimespecToNsec(st.Mtim), st.Size, int64(st.Nlink), int64(st.Dev)}
}

// stamp is the key's change time, the file system's clock.
func (k fileKey) stamp() int64 { return k[1] }

func (k fileKey) dev() int64 { return k[5] }

// runsDirFD is a listing's runs directory, open, so that a run's stat
// names two components from it rather than walking the whole path.
type runsDirFD struct {
	path string
	f    *os.File
}

func openRunsDir(path string) runsDirFD {
	f, _ := os.Open(path)
	return runsDirFD{path: path, f: f}
}

func (d runsDirFD) close() {
	if d.f != nil {
		d.f.Close()
	}
}

// key is the key of run id's folder; false when it is no directory.
func (d runsDirFD) key(id string) (fileKey, bool) {
	var st unix.Stat_t
	var err error
	if d.f != nil {
		err = unix.Fstatat(int(d.f.Fd()), id, &st, unix.AT_SYMLINK_NOFOLLOW)
	} else {
		err = unix.Lstat(d.path+string(filepath.Separator)+id, &st)
	}
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fileKey{}, false
	}
	return keyOfStat(&st), true
}

// keyOf is the key of the run whose blackboard.json is at path.
func keyOf(path string) (fileKey, bool) {
	var st unix.Stat_t
	if unix.Lstat(filepath.Dir(path), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fileKey{}, false
	}
	return keyOfStat(&st), true
}

// fsNowOS is the file system's time now, as a run's folder's change time
// would read it, and the device it is of: the change time of the index's
// lock file once touched (made if missing).
func fsNowOS(indexPath string) (now, dev int64, ok bool) {
	lp := indexPath + ".lock"
	// Whatever times are set, the change time is the file system's now.
	t := time.Now()
	err := os.Chtimes(lp, t, t)
	if os.IsNotExist(err) {
		if os.MkdirAll(filepath.Dir(lp), board.DirMode) != nil {
			return 0, 0, false
		}
		f, ferr := safefs.OpenFile(lp, os.O_RDWR|os.O_CREATE, board.FileMode)
		if ferr != nil {
			return 0, 0, false
		}
		f.Close()
		err = os.Chtimes(lp, t, t)
	}
	var st unix.Stat_t
	if err != nil || unix.Lstat(lp, &st) != nil {
		return 0, 0, false
	}
	return unix.TimespecToNsec(st.Ctim), int64(st.Dev), true
}

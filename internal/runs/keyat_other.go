//go:build !unix

package runs

import (
	"os"
	"path/filepath"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// keyOf is the key of the run whose blackboard.json is at path: the
// modification time of its folder (touched by every write in place,
// boardlock.Touch), and the size and modification time of its
// blackboard.json and journal.
func keyOf(path string) (fileKey, bool) {
	di, err := os.Stat(filepath.Dir(path))
	if err != nil || !di.IsDir() {
		return fileKey{}, false
	}
	k := fileKey{di.ModTime().UnixNano()}
	if fi, err := os.Stat(path); err == nil {
		k[1], k[2] = fi.Size(), fi.ModTime().UnixNano()
	}
	if ji, err := os.Stat(board.JournalPath(path)); err == nil {
		k[3], k[4] = ji.Size(), ji.ModTime().UnixNano()
	}
	return k, true
}

// stamp is the latest of the key's times.
func (k fileKey) stamp() int64 { return max(k[0], k[2], k[4]) }

func (k fileKey) dev() int64 { return 0 }

type runsDirFD struct{ path string }

func openRunsDir(path string) runsDirFD { return runsDirFD{path: path} }

func (d runsDirFD) close() {}

func (d runsDirFD) key(id string) (fileKey, bool) {
	return keyOf(filepath.Join(d.path, id, "blackboard.json"))
}

// fsNowOS is the time now, as the folder's times read it.
func fsNowOS(indexPath string) (now, dev int64, ok bool) {
	lp := indexPath + ".lock"
	t := time.Now()
	if os.Chtimes(lp, t, t) != nil {
		return 0, 0, false
	}
	fi, err := os.Stat(lp)
	if err != nil {
		return 0, 0, false
	}
	return fi.ModTime().UnixNano(), 0, true
}

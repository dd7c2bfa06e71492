//go:build unix

package runs

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
)

// runsDirFD is the runs directory, open so that a listing's stats name a
// run's files from it: the kernel walks two names per stat rather than
// the whole path, and nothing is allocated per file.
type runsDirFD struct{ f *os.File }

func openRunsDir(runsDir string) runsDirFD {
	f, err := os.Open(runsDir)
	if err != nil {
		return runsDirFD{}
	}
	return runsDirFD{f}
}

func (d runsDirFD) Close() {
	if d.f != nil {
		d.f.Close()
	}
}

// key is keyOf(runsDir/id/blackboard.json), the same figures.
func (d runsDirFD) key(runsDir, id string) (fileKey, bool) {
	if d.f == nil {
		return keyOf(runsDir + string(os.PathSeparator) + id + string(os.PathSeparator) + "blackboard.json")
	}
	fd := int(d.f.Fd())
	var st unix.Stat_t
	rel := id + "/blackboard.json"
	if unix.Fstatat(fd, rel, &st, 0) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fileKey{}, false
	}
	k := fileKey{st.Size, st.Mtim.Nano()}
	if unix.Fstatat(fd, board.JournalPath(rel), &st, 0) == nil {
		k[2], k[3] = st.Size, st.Mtim.Nano()
	}
	if unix.Fstatat(fd, boardlock.LockPath(rel), &st, 0) == nil {
		k[4], k[5] = st.Size, st.Mtim.Nano()
	}
	return k, true
}

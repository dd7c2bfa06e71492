package patch

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// New contents are written to temporary files before they are renamed
// into place. They are kept in a directory of the apply's own,
// .runner/staging/<pid>-<random>/, never beside the files they replace:
// an apply killed with SIGKILL (or a power cut) then leaves no stray file
// among the tree's own, only this hidden directory, which the next apply
// in the tree removes once the process that made it is gone (it holds a
// lock on it while it lives). A file system mounted inside the tree,
// which a rename cannot cross, gets a temporary file beside the target
// for the moment of the rename only.

// StagingRoot is where applies keep their temporary files, relative to
// the directory.
const StagingRoot = ".runner/staging"

// staging is one apply's staging directory, made on first use.
type staging struct {
	dir  string   // relative to the tree; "" until made
	made []string // directories made for it above dir, outermost first
	lock *os.File // held while the apply runs (see lockStaging)
	n    atomic.Int64
	err  error
}

// stagingDir returns the apply's staging directory, making it (and
// locking it) on first use.
func (t *tree) stagingDir() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &t.stage
	if st.dir != "" || st.err != nil {
		return st.dir, st.err
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	dir := StagingRoot + "/" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(rnd[:])
	// Another apply may remove .runner/staging as it finishes, between
	// the check and the mkdir: try again then.
	var err error
	for try := 0; try < 3; try++ {
		var made []string
		if made, err = mkdirs(t.root, dir); err == nil {
			st.made = append(st.made, made...)
			break
		}
	}
	if err != nil {
		st.err = fmt.Errorf("patch: staging directory: %w", err)
		return "", st.err
	}
	if st.lock, err = lockStaging(t.root, dir); err != nil {
		_ = t.root.RemoveAll(dir)
		st.err = fmt.Errorf("patch: staging directory: %w", err)
		return "", st.err
	}
	st.dir = dir
	return dir, nil
}

// tempPath is a new, unused name in the staging directory.
func (t *tree) tempPath() (string, error) {
	dir, err := t.stagingDir()
	if err != nil {
		return "", err
	}
	return dir + "/" + strconv.FormatInt(t.stage.n.Add(1), 10), nil
}

// dropStaging removes the staging directory, with what is left in it and
// the directories made for it when they are empty.
func (t *tree) dropStaging() {
	st := &t.stage
	if st.dir == "" {
		return
	}
	t.forget(st.dir)
	_ = t.root.RemoveAll(st.dir)
	if st.lock != nil {
		st.lock.Close()
	}
	removeDirs(t, st.made)
	st.dir, st.made, st.lock = "", nil, nil
}

// mkdirs makes dir and the directories above it that are missing,
// refusing a link or a file on the way, and returns those it made,
// outermost first.
func mkdirs(root *os.Root, dir string) ([]string, error) {
	var made []string
	for i := 0; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		sub := dir[:i]
		fi, err := root.Lstat(sub)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := root.Mkdir(sub, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return made, err
			}
			made = append(made, sub)
		case err != nil:
			return made, err
		case !fi.IsDir():
			return made, refuse(Unsafe, "%s is not a directory", sub)
		}
	}
	return made, nil
}

// cleanStale removes what applies killed before they could finish left
// in the staging root: each directory whose lock no live process holds.
func (t *tree) cleanStale() {
	if exists, err := dirExists(t.root, StagingRoot); err != nil || !exists {
		return
	}
	f, err := t.root.Open(StagingRoot)
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	for _, n := range names {
		p := StagingRoot + "/" + n
		if strings.HasPrefix(n, ".") || !staleStaging(t.root, p, n) {
			continue
		}
		_ = t.root.RemoveAll(p)
	}
	_ = t.root.Remove(StagingRoot) // empty now, unless an apply runs
}

// commitRename renames the staged file tmp to p. Across file systems (a
// mount inside the tree) it copies the staged content to a temporary file
// beside p first, which is then renamed.
func (t *tree) commitRename(tmp, p string, mode fs.FileMode) error {
	err := t.renameAcross(tmp, p)
	if !isCrossDevice(err) {
		return err
	}
	data, rerr := t.readRegular(tmp)
	if rerr != nil {
		return err
	}
	beside := besideName(p)
	if err := t.writeTemp(beside, data, mode); err != nil {
		return err
	}
	if err := t.rename(beside, p); err != nil {
		_ = t.remove(beside)
		return err
	}
	_ = t.remove(tmp)
	return nil
}

// besideName is a temporary name in p's own directory, short enough for
// any name p may have.
func besideName(p string) string {
	dir, _ := split(p)
	if dir != "" {
		dir += "/"
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	return dir + ".runner-" + hex.EncodeToString(rnd[:]) + ".tmp"
}

// syncStaged makes the new contents staged without an fsync durable
// before the first of them is renamed into place, so that a power cut
// leaves each file either as it was or whole, as an fsync per file did:
// one syncfs(2) on the staging directory's file system (a 3,000-file
// apply on ext4 made 3,000 journal commits, and spent more CPU in them
// than git apply's whole run). Should syncfs fail, each staged file is
// fsynced instead. Writes after this one (a rollback's) sync each file.
func (t *tree) syncStaged(ts []*target) error {
	if !t.unsynced.Load() {
		t.deferSync = false
		return nil
	}
	if testHook != nil {
		testHook("sync", "")
	}
	t.deferSync = false
	t.unsynced.Store(false)
	if h, err := t.dirHandle(t.stage.dir); err == nil && h.f != nil && !syncFSFails {
		if err := syncFS(h.fd); err == nil {
			return nil
		}
	}
	for _, tg := range ts {
		if tg.tmp == "" {
			continue
		}
		f, err := t.root.OpenFile(tg.tmp, os.O_RDONLY, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// syncFSFails makes syncStaged take its fallback (for tests).
var syncFSFails bool

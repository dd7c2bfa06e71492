package patch

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Each apply that writes files keeps a backup under BackupRoot; without a
// bound they pile up (16 MB of backups for a 10 KB file after 1,000
// applies). After a successful apply, the oldest backups beyond the last
// Options.KeepBackups are pruned.
//
// Backups in use are never pruned, and a backup is either whole or gone:
// an apply holds a shared lock on its own backup directory from the
// moment it makes it until it returns, and an undo (Rollback) holds one
// while it restores. Pruning takes an exclusive lock without waiting (a
// backup in use is skipped, and pruned by a later apply), renames the
// directory out of the way while holding it, and only then removes it.
// So an undo finds a backup with all of its files, or no backup at all,
// which it reports as pruned.

// DefaultKeepBackups is how many backups an apply keeps when
// Options.KeepBackups is 0.
const DefaultKeepBackups = 20

// KeepAllBackups as Options.KeepBackups turns pruning off.
const KeepAllBackups = -1

// prunedPrefix names a backup directory being removed.
const prunedPrefix = ".pruned-"

type backupEntry struct {
	dir     string // relative to the tree, slash form
	created time.Time
}

// listBackups finds the whole backups under BackupRoot: the directories
// holding a manifest, one level down (runner apply's) or two (a run's
// steps', BackupRoot/<run>/<label>-<visit>). A backup without its
// manifest is still being written, or was left by an apply that died
// before it changed anything; neither is counted or pruned.
func listBackups(root *os.Root) ([]backupEntry, error) {
	top, err := readDirNames(root, BackupRoot)
	if err != nil {
		return nil, err
	}
	var out []backupEntry
	add := func(dir string) bool {
		fi, err := root.Lstat(dir + "/" + manifestName)
		if err != nil || !fi.Mode().IsRegular() {
			return false
		}
		out = append(out, backupEntry{dir: dir, created: fi.ModTime()})
		return true
	}
	for _, name := range top {
		dir := BackupRoot + "/" + name
		if strings.HasPrefix(name, ".") || add(dir) {
			continue
		}
		subs, err := readDirNames(root, dir)
		if err != nil {
			continue // not a directory, or gone meanwhile
		}
		for _, s := range subs {
			if !strings.HasPrefix(s, ".") {
				add(dir + "/" + s)
			}
		}
	}
	// Oldest first; the name breaks ties (a timestamp in runner apply's).
	slices.SortFunc(out, func(a, b backupEntry) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return strings.Compare(a.dir, b.dir)
	})
	return out, nil
}

// readDirNames lists directory p, refusing a link on the way.
func readDirNames(root *os.Root, p string) ([]string, error) {
	fi, err := root.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, refuse(Unsafe, "%s is not a directory", p)
	}
	f, err := root.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// pruneBackups removes the oldest backups beyond the newest keep, never
// own (the apply's own backup) and never one in use. It returns a note for
// each backup that could not be removed.
func pruneBackups(t *tree, keep int, own string) []string {
	if keep < 0 {
		return nil
	}
	if keep == 0 {
		keep = DefaultKeepBackups
	}
	root := t.root
	all, err := listBackups(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return []string{fmt.Sprintf("old backups were not pruned: %v", err)}
	}
	removeStalePruned(root)
	var notes []string
	for _, b := range all[:max(0, len(all)-keep)] {
		if b.dir == own {
			continue
		}
		if err := pruneOne(t, b); err != nil {
			notes = append(notes, fmt.Sprintf("old backup %s was not pruned: %v", b.dir, err))
		}
	}
	return notes
}

// pruneOne removes backup b unless it is in use.
func pruneOne(t *tree, b backupEntry) error {
	root := t.root
	dir := b.dir
	lock, err := lockDir(root, dir, true, false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || isBusy(err) {
			return nil // pruned by another apply meanwhile, or in use
		}
		return err
	}
	// The name may have been pruned by another apply since it was listed,
	// and taken by a new backup, just made and not locked yet by its
	// apply: only the backup listed, whole (its manifest written last,
	// under its apply's lock), goes.
	if fi, err := root.Lstat(dir + "/" + manifestName); err != nil || !fi.Mode().IsRegular() || !fi.ModTime().Equal(b.created) {
		lock.Close()
		return nil
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	gone := BackupRoot + "/" + prunedPrefix + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(rnd[:])
	t.forget(dir)
	err = root.Rename(dir, gone)
	lock.Close()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if parent := dirOf(dir); parent != BackupRoot {
		_ = root.Remove(parent) // a run's directory, once its last backup goes
	}
	return root.RemoveAll(gone)
}

// removeStalePruned removes what a pruning killed midway left. Those
// directories are no backup any more (renamed away whole), so removing
// one that another apply is removing too is harmless.
func removeStalePruned(root *os.Root) {
	names, err := readDirNames(root, BackupRoot)
	if err != nil {
		return
	}
	for _, n := range names {
		if strings.HasPrefix(n, prunedPrefix) {
			_ = root.RemoveAll(BackupRoot + "/" + n)
		}
	}
}

// isBusy reports whether err is a lock held elsewhere.
func isBusy(err error) bool {
	return errors.Is(err, errWouldBlock)
}

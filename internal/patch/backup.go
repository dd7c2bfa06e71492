package patch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// BackupRoot is where backups go, relative to the directory.
const BackupRoot = ".runner/backups"

// manifestName is the backup's index, beside the copies of the files.
const manifestName = ".runner-backup.json"

type manifest struct {
	Version int            `json:"version"`
	Created time.Time      `json:"created"`
	Files   []manifestFile `json:"files"`
	// Dirs were created by the apply; a rollback removes them when empty.
	Dirs []string `json:"dirs,omitempty"`
}

type manifestFile struct {
	Path    string      `json:"path"`
	Existed bool        `json:"existed"` // false: the apply created it, a rollback deletes it
	Mode    fs.FileMode `json:"mode,omitempty"`
}

// writeBackup copies the files about to change to BackupRoot/id/<path>
// and writes a manifest that Rollback reads. It returns the backup
// directory, relative to the root, and the directories above it that it
// had to make (outermost first).
func writeBackup(ctx context.Context, t *tree, id string, ts []*target) (dir string, made []string, err error) {
	root := t.root
	if id == "" {
		id = time.Now().UTC().Format("20060102-150405.000000000")
	}
	if err := checkName(id); err != nil {
		return "", nil, fmt.Errorf("patch: backup id %q: %w", id, err)
	}
	id, _ = strip(id, 0)
	base := BackupRoot + "/" + id
	parts := strings.Split(base, "/")
	for i := range parts[:len(parts)-1] {
		sub := strings.Join(parts[:i+1], "/")
		if exists, _ := dirExists(root, sub); !exists {
			made = append(made, sub)
		}
	}
	// Never overwrite an earlier backup, nor share one with an apply
	// running at the same time: the backup's own directory is claimed by
	// a Mkdir that fails when it exists (a check first, then a MkdirAll,
	// once let two applies write into one backup). Another apply pruning
	// the last backup of a run removes the run's directory, which may be
	// between our two mkdirs: try again then.
	dir = base
	for n, tries := 2, 0; ; {
		if err := root.MkdirAll(dirOf(base), 0o755); err != nil {
			return "", nil, fmt.Errorf("patch: backup: %w", err)
		}
		err := root.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		switch {
		case errors.Is(err, fs.ErrExist):
			dir = fmt.Sprintf("%s-%d", base, n)
			n++
		case errors.Is(err, fs.ErrNotExist) && tries < 3:
			tries++
		default:
			return "", nil, fmt.Errorf("patch: backup: %w", err)
		}
	}
	// MkdirAll follows links; make sure none was put in the way meanwhile.
	if _, err := dirExists(root, dir); err != nil {
		return "", nil, fmt.Errorf("patch: backup: %w", err)
	}
	// In use until the apply returns: not to be pruned by another.
	if t.inUse, err = lockDir(root, dir, false, true); err != nil {
		return "", nil, fmt.Errorf("patch: backup: %w", err)
	}
	m := manifest{Version: 1, Created: time.Now().UTC()}
	var copies []*target
	mkdirs := map[string]bool{}
	for _, tg := range ts {
		m.Files = append(m.Files, manifestFile{Path: tg.path, Existed: tg.existed, Mode: tg.oldMode})
		m.Dirs = append(m.Dirs, tg.dirs...)
		if !tg.existed {
			continue
		}
		if tg.path == manifestName {
			return "", nil, refuse(Unsafe, "%s: this name is reserved for backups; apply with backups off", tg.path)
		}
		if d := dirOf(tg.path); d != "" && !mkdirs[d] {
			mkdirs[d] = true
			// Through the tree's directory handles, which the links
			// below use too: MkdirAll on the Root walked the whole
			// path, one openat per component, for every directory.
			if err := t.mkdirAll(dir + "/" + d); err != nil {
				return "", nil, fmt.Errorf("patch: backup: %w", err)
			}
		}
		copies = append(copies, tg)
	}
	errs := make([]error, len(copies))
	parallel(len(copies), func(i int) {
		if testHook != nil {
			testHook("backup", copies[i].path)
		}
		if errs[i] = ctx.Err(); errs[i] == nil {
			errs[i] = keep(t, dir+"/"+copies[i].path, copies[i])
		}
	})
	if err := errors.Join(errs...); err != nil {
		// Not a backup: take it away again, with the directories made
		// for it.
		t.forget(dir)
		_ = root.RemoveAll(dir)
		removeDirs(t, made)
		return "", nil, fmt.Errorf("patch: backup: %w", err)
	}
	// The copies' names must outlive a crash as much as the files do.
	bdirs := []string{dir}
	for d := range mkdirs {
		bdirs = append(bdirs, dir+"/"+d)
	}
	t.syncDirs(bdirs)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", nil, err
	}
	if err := t.writeAtomic(dir+"/"+manifestName, b, 0o644); err != nil {
		return "", nil, fmt.Errorf("patch: backup: %w", err)
	}
	return dir, made, nil
}

// keep puts t's original content at p. A hard link costs nothing and is
// safe here because an apply never writes a file in place: it renames a
// new file over the path, so the old inode stays, unchanged, with the
// backup as its only name. A file with other names (which could still
// change it), one that changed since it was read, or a file system
// without links gets a copy instead.
func keep(t *tree, p string, tg *target) error {
	if tg.links == 1 && t.link(tg.path, p) == nil {
		if fi, _, err := t.lstat(p); err == nil && fi != nil && fi.Size() == tg.size && links(fi) == 2 {
			return nil
		}
		_ = t.remove(p)
	}
	orig, err := tg.original(t, "")
	if err != nil {
		return err
	}
	return t.writeTemp(p, orig, tg.oldMode)
}

// dirExists reports whether directory p exists, refusing a link or a
// file anywhere on the way.
func dirExists(root *os.Root, p string) (bool, error) {
	parts := strings.Split(p, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		fi, err := root.Lstat(sub)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !fi.IsDir() {
			return false, refuse(Unsafe, "%s is not a directory", sub)
		}
	}
	return true, nil
}

// Rollback restores the files of a backup made by Apply: files that
// existed get their old content and mode back, files the apply created are
// deleted, and directories it created are removed when empty. backupDir is
// Result.BackupDir (relative to dir) or an absolute path inside dir.
func Rollback(dir, backupDir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("patch: %w", err)
	}
	defer root.Close()
	t := newTree(root)
	defer t.close()
	defer t.dropStaging()
	t.cleanStale()
	rel := filepath.ToSlash(backupDir)
	if filepath.IsAbs(backupDir) {
		absDir, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("patch: %w", err)
		}
		r, err := filepath.Rel(absDir, backupDir)
		if err != nil {
			return fmt.Errorf("patch: %w", err)
		}
		rel = filepath.ToSlash(r)
	}
	if err := checkName(rel); err != nil {
		return fmt.Errorf("patch: backup directory %q: %w", backupDir, err)
	}
	// Held while restoring, so that no apply prunes the backup midway.
	lock, err := lockDir(root, rel, false, true)
	if err == nil {
		t.inUse = lock
		// Pruning renames a backup away before removing it: one renamed
		// between our open and our lock is no longer at its name.
		fi, ferr := lock.Stat()
		now, lerr := root.Lstat(rel)
		if ferr != nil || lerr != nil || !os.SameFile(fi, now) {
			err = fs.ErrNotExist
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("patch: no backup at %s: it was pruned, or never made (an apply keeps the last %d backups unless told otherwise; runner apply --keep-backups, apply_diff's keep_backups)", rel, DefaultKeepBackups)
	}
	if err != nil {
		return fmt.Errorf("patch: backup: %w", err)
	}
	b, err := t.readRegular(rel + "/" + manifestName)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("patch: %s is not a whole backup (no %s in it): it was left by an apply that stopped before changing anything", rel, manifestName)
		}
		return fmt.Errorf("patch: backup: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("patch: backup manifest: %w", err)
	}
	var errs []error
	for _, f := range slices.Backward(m.Files) {
		// A manifest is a file in the tree: hold it to the diff's rules.
		if err := errors.Join(checkName(f.Path), checkTarget(f.Path)); err != nil {
			errs = append(errs, err)
			continue
		}
		if !f.Existed {
			errs = append(errs, removeFile(t, f.Path))
			continue
		}
		src := rel + "/" + f.Path
		data, err := t.readRegular(src)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, putBack(t, f.Path, data, f.Mode&modeBits))
	}
	var dirs []string
	for _, d := range m.Dirs {
		if checkName(d) == nil {
			dirs = append(dirs, d)
		}
	}
	slices.SortFunc(dirs, func(a, b string) int { return len(a) - len(b) })
	removeDirs(t, dirs)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("patch: rollback: %w", err)
	}
	return nil
}

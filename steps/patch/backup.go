package patch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
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
func writeBackup(root *os.Root, id string, ts []*target) (dir string, made []string, err error) {
	if id == "" {
		id = time.Now().UTC().Format("20060102-150405.000000000")
	}
	if err := checkName(id); err != nil {
		return "", nil, fmt.Errorf("patch: backup id %q: %w", id, err)
	}
	id, _ = strip(id, 0)
	base := BackupRoot + "/" + id
	// Never overwrite an earlier backup.
	dir = base
	for n := 2; ; n++ {
		exists, err := dirExists(root, dir)
		if err != nil {
			return "", nil, fmt.Errorf("patch: backup: %w", err)
		}
		if !exists {
			break
		}
		dir = fmt.Sprintf("%s-%d", base, n)
	}
	parts := strings.Split(dir, "/")
	for i := range parts[:len(parts)-1] {
		sub := strings.Join(parts[:i+1], "/")
		if exists, _ := dirExists(root, sub); !exists {
			made = append(made, sub)
		}
	}
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("patch: backup: %w", err)
	}
	// MkdirAll follows links; make sure none was put in the way meanwhile.
	if _, err := dirExists(root, dir); err != nil {
		return "", nil, fmt.Errorf("patch: backup: %w", err)
	}
	m := manifest{Version: 1, Created: time.Now().UTC()}
	var copies []*target
	for _, t := range ts {
		m.Files = append(m.Files, manifestFile{Path: t.path, Existed: t.existed, Mode: t.mode})
		m.Dirs = append(m.Dirs, t.dirs...)
		if !t.existed {
			continue
		}
		if t.path == manifestName {
			return "", nil, refuse(Unsafe, "%s: this name is reserved for backups; apply with backups off", t.path)
		}
		if d := path.Dir(t.path); d != "." {
			if err := root.MkdirAll(dir+"/"+d, 0o755); err != nil {
				return "", nil, fmt.Errorf("patch: backup: %w", err)
			}
		}
		copies = append(copies, t)
	}
	errs := make([]error, len(copies))
	parallel(len(copies), func(i int) {
		errs[i] = writeTemp(root, dir+"/"+copies[i].path, copies[i].orig, copies[i].mode)
	})
	if err := errors.Join(errs...); err != nil {
		return "", nil, fmt.Errorf("patch: backup: %w", err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", nil, err
	}
	if err := writeAtomic(root, dir+"/"+manifestName, b, 0o644); err != nil {
		return "", nil, fmt.Errorf("patch: backup: %w", err)
	}
	return dir, made, nil
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
	if _, _, err := lstat(root, rel+"/"+manifestName); err != nil {
		return fmt.Errorf("patch: backup: %w", err)
	}
	b, err := root.ReadFile(rel + "/" + manifestName)
	if err != nil {
		return fmt.Errorf("patch: backup: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("patch: backup manifest: %w", err)
	}
	var errs []error
	for _, f := range slices.Backward(m.Files) {
		if err := checkName(f.Path); err != nil {
			errs = append(errs, err)
			continue
		}
		if !f.Existed {
			errs = append(errs, removeFile(root, f.Path))
			continue
		}
		src := rel + "/" + f.Path
		if _, _, err := lstat(root, src); err != nil {
			errs = append(errs, err)
			continue
		}
		data, err := root.ReadFile(src)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, putBack(root, f.Path, data, f.Mode&modeBits))
	}
	var dirs []string
	for _, d := range m.Dirs {
		if checkName(d) == nil {
			dirs = append(dirs, d)
		}
	}
	slices.SortFunc(dirs, func(a, b string) int { return len(a) - len(b) })
	removeDirs(root, dirs)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("patch: rollback: %w", err)
	}
	return nil
}

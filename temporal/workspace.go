package temporal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// A run's workspace travels with it: the client puts the plan's
// directory in the Store as a manifest (each file by its sha256), and the
// host the run is pinned to makes it again in a directory of its own
// (WorkRoot/<run id>), so workers need no checkout at the client's
// absolute paths. After each step the host puts the workspace back as a
// new manifest, so a run re-pinned to another host goes on with the files
// its steps left, and the client can fetch the final one (--sync-back).

// Manifest is a workspace in the Store. Paths are relative to the run's
// root on a worker, with / between names.
type Manifest struct {
	// Workdir is where steps run; PlanDir holds the plan's files (inside
	// Workdir when the client's plan dir is inside its workdir, so a path
	// from one to the other is the same on every host); Plan is the plan
	// file's name in PlanDir.
	Workdir, PlanDir, Plan string
	Files                  []WorkspaceFile
}

// WorkspaceFile is one file of a workspace: a regular file's bytes by
// name in the Store, or a symbolic link's target.
type WorkspaceFile struct {
	Path string
	Mode fs.FileMode `json:",omitempty"` // permission bits
	Blob string      `json:",omitempty"`
	Link string      `json:",omitempty"`
}

// Bounds on a workspace: a plan's directory is a plan and what ships
// with it, not a whole checkout; past these the client says to narrow it
// with .runnerignore or to share the workspace (--shared-workspace).
const (
	MaxWorkspaceFiles = 5000
	MaxWorkspaceBytes = 256 << 20
)

// IgnoreFile, in the plan's directory, lists what does not travel with
// the run, one pattern a line (# comments): a pattern without / matches a
// file or directory name at any depth, one with / a path from the plan's
// directory (a leading / anchors nothing more); a trailing / matches
// directories only. .git and .runner are never sent.
const IgnoreFile = ".runnerignore"

// The layout of a run's root on a worker.
const (
	wsWork = "work"
	wsPlan = "plan"
)

// PackWorkspace puts the directory of the plan at planPath in the store
// and returns the manifest's name. workdir is the run's (the client's):
// when the plan's directory is inside it, it keeps its place under the
// worker's workdir.
func PackWorkspace(store Store, planPath, workdir string) (string, error) {
	planDir := filepath.Dir(planPath)
	m := Manifest{Workdir: wsWork, PlanDir: wsPlan, Plan: filepath.Base(planPath)}
	if rel, err := filepath.Rel(workdir, planDir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel) {
		m.PlanDir = path.Join(wsWork, filepath.ToSlash(rel))
	}
	ign, err := readIgnore(filepath.Join(planDir, IgnoreFile))
	if err != nil {
		return "", err
	}
	files, err := packTree(store, planDir, m.PlanDir, func(rel string, dir bool) bool {
		base := path.Base(rel)
		return base == ".git" || (rel == ".runner" && dir) || ign.match(rel, dir)
	}, nil)
	if err != nil {
		return "", fmt.Errorf("the plan's directory %s: %w", planDir, err)
	}
	m.Files = files
	return putManifest(store, m)
}

func putManifest(store Store, m Manifest) (string, error) {
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
	data, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	return store.Put(data)
}

// LoadManifest reads a manifest from the store.
func LoadManifest(store Store, name string) (*Manifest, error) {
	data, err := store.Get(name)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("workspace manifest %s: %w", name, err)
	}
	paths := []string{m.Workdir, m.PlanDir, path.Join(m.PlanDir, m.Plan)}
	if strings.Contains(m.Plan, "/") || m.Plan == "" || m.Plan == ".." {
		paths = append(paths, "../"+m.Plan)
	}
	for _, f := range m.Files {
		paths = append(paths, f.Path)
	}
	for _, p := range paths {
		if !localPath(p) {
			return nil, fmt.Errorf("workspace manifest %s: path %q leaves the workspace", name, p)
		}
	}
	return &m, nil
}

// localPath: relative, clean, and not climbing out.
func localPath(p string) bool {
	return p != "" && filepath.IsLocal(filepath.FromSlash(p)) && path.Clean(p) == p
}

// hashCache remembers the sha256 of files by path, size and time, so a
// snapshot after each step hashes only what changed.
type hashCache map[string]hashed

type hashed struct {
	size  int64
	mtime int64
	blob  string
}

// packTree puts the files under dir in the store, named prefix/<rel>.
// skip says what not to look into.
func packTree(store Store, dir, prefix string, skip func(rel string, dir bool) bool, cache hashCache) ([]WorkspaceFile, error) {
	var out []WorkspaceFile
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if skip(rel, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if len(out) >= MaxWorkspaceFiles {
			return fmt.Errorf("more than %d files: list what the run does not need in %s, or share the workspace (--shared-workspace)", MaxWorkspaceFiles, IgnoreFile)
		}
		name := path.Join(prefix, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out = append(out, WorkspaceFile{Path: name, Link: target})
		case fi.Mode().IsRegular():
			total += fi.Size()
			if total > MaxWorkspaceBytes {
				return fmt.Errorf("more than %d MiB: list what the run does not need in %s, or share the workspace (--shared-workspace)", MaxWorkspaceBytes>>20, IgnoreFile)
			}
			blob := ""
			if c, ok := cache[p]; ok && c.size == fi.Size() && c.mtime == fi.ModTime().UnixNano() {
				blob = c.blob
			} else {
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				if blob, err = store.Put(data); err != nil {
					return err
				}
				if cache != nil {
					cache[p] = hashed{fi.Size(), fi.ModTime().UnixNano(), blob}
				}
			}
			out = append(out, WorkspaceFile{Path: name, Mode: fi.Mode().Perm(), Blob: blob})
		}
		return nil // sockets, devices, pipes: not a workspace's
	})
	return out, err
}

// ignore is a parsed .runnerignore.
type ignore []string

func readIgnore(p string) (ignore, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out ignore
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if _, err := path.Match(strings.Trim(line, "/"), ""); err != nil {
			return nil, fmt.Errorf("%s:%d: %q: %v", p, i+1, line, err)
		}
		out = append(out, line)
	}
	return out, nil
}

func (ig ignore) match(rel string, dir bool) bool {
	for _, pat := range ig {
		dirOnly := strings.HasSuffix(pat, "/")
		pat = strings.TrimSuffix(pat, "/")
		if dirOnly && !dir {
			continue
		}
		if strings.Contains(strings.TrimPrefix(pat, "/"), "/") || strings.HasPrefix(pat, "/") {
			if ok, _ := path.Match(strings.TrimPrefix(pat, "/"), rel); ok {
				return true
			}
			continue
		}
		if ok, _ := path.Match(pat, path.Base(rel)); ok {
			return true
		}
	}
	return false
}

// materialize makes the workspace of manifest m under root, which must
// not exist: it is made beside it and renamed into place, so a worker
// killed meanwhile leaves no half workspace.
func materialize(store Store, m *Manifest, root string) error {
	if err := os.MkdirAll(filepath.Dir(root), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(root), ".ws-*")
	if err != nil {
		return err
	}
	if err := writeFiles(store, m, tmp, ""); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	for _, d := range []string{m.Workdir, m.PlanDir} {
		if err := os.MkdirAll(filepath.Join(tmp, filepath.FromSlash(d)), 0o755); err != nil {
			os.RemoveAll(tmp)
			return err
		}
	}
	if err := os.Rename(tmp, root); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	return nil
}

// writeFiles writes the files of m under prefix (all for "") into dir,
// prefix taken off their paths.
func writeFiles(store Store, m *Manifest, dir, prefix string) error {
	for _, f := range m.Files {
		rel := f.Path
		if prefix != "" {
			var ok bool
			if rel, ok = strings.CutPrefix(f.Path, prefix+"/"); !ok {
				continue
			}
		}
		dst := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if f.Link != "" {
			os.Remove(dst)
			if err := os.Symlink(f.Link, dst); err != nil {
				return err
			}
			continue
		}
		data, err := store.Get(f.Blob)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		os.Remove(dst) // a link or a read-only file in the way
		if err := os.WriteFile(dst, data, mode); err != nil {
			return err
		}
	}
	return nil
}

// SyncBack writes the workdir files of the workspace manifest name (a
// run's final one) into dir: files the run's steps left, over what dir
// holds; nothing in dir is deleted.
func SyncBack(store Store, name, dir string) error {
	m, err := LoadManifest(store, name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeFiles(store, m, dir, m.Workdir)
}

// snapshot puts the workspace under root back in the store as a manifest
// laid out as base: the workdir (its .runner/ but for this run's own
// .runner/runs/<id>/ left out, as .git) and the plan's dir.
func snapshot(store Store, base *Manifest, root, runID string, cache hashCache) (string, error) {
	m := Manifest{Workdir: base.Workdir, PlanDir: base.PlanDir, Plan: base.Plan}
	own := ".runner/runs/" + runID
	skip := func(rel string, dir bool) bool {
		switch {
		case path.Base(rel) == ".git":
			return true
		case rel == ".runner" || rel == ".runner/runs" || rel == own || strings.HasPrefix(rel, own+"/"):
			return false
		case strings.HasPrefix(rel, ".runner/"):
			return true
		}
		return false
	}
	files, err := packTree(store, filepath.Join(root, filepath.FromSlash(m.Workdir)), m.Workdir, skip, cache)
	if err != nil {
		return "", err
	}
	// The plan's directory, when it is not the workdir or inside it
	// (packed above already).
	if m.PlanDir != m.Workdir && !strings.HasPrefix(m.PlanDir, m.Workdir+"/") {
		more, err := packTree(store, filepath.Join(root, filepath.FromSlash(m.PlanDir)), m.PlanDir,
			func(rel string, _ bool) bool { return path.Base(rel) == ".git" }, cache)
		if err != nil {
			return "", err
		}
		files = append(files, more...)
	}
	m.Files = files
	return putManifest(store, m)
}

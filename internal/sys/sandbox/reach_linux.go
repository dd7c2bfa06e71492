package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// A step's program must run in its sandbox wherever it is installed. Run
// as root, the sandbox's root is an unprivileged stranger to the host
// (MappedRoot), which cannot search root's home or another 0700
// directory: a coding agent's CLI installed under /root (npm's prefix,
// nvm) would not even start. Such a program's install, and each read
// path in such a place, is "reached": runner opens a read-only copy of
// its tree and the helper mounts it in place under the cover of the
// directory it could not search (see coverBlocked). Only what the
// program needs is reached; the rest of that directory stays out of
// sight.

// programPaths are the directories (symbolic links resolved) that the
// program at path needs to run: its own and, for a script, its
// interpreter's (a `#!/usr/bin/env name` looked up in env's PATH), each
// as installTree gives it.
func programPaths(path string, env []string) []string {
	var out []string
	for range 4 { // a script whose interpreter is a script, at most this deep
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			break
		}
		out = append(out, installTree(real))
		if d, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
			out = append(out, d) // where a link named by PATH lies
		}
		next := interpreter(real, env)
		if next == "" {
			break
		}
		path = next
	}
	return outermost(out)
}

// installTree is the tree a program file belongs to: for one in an npm
// tree, the outermost node_modules (a package's CLI loads its siblings
// and the platform packages beside it); otherwise its directory.
func installTree(real string) string {
	if i := strings.Index(real, "/node_modules/"); i >= 0 {
		return real[:i+len("/node_modules")]
	}
	return filepath.Dir(real)
}

// interpreter is the program a script at path starts with (its #! line,
// `env NAME` looked up in env's PATH), "" for a binary or an unreadable
// file.
func interpreter(path string, env []string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var buf [256]byte
	n, _ := f.Read(buf[:])
	line, _, _ := bytes.Cut(buf[:n], []byte("\n"))
	rest, ok := bytes.CutPrefix(line, []byte("#!"))
	if !ok {
		return ""
	}
	fields := strings.Fields(string(rest))
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) != "env" {
		return fields[0]
	}
	for _, f := range fields[1:] {
		f = strings.TrimPrefix(f, "-S")
		if f == "" || strings.HasPrefix(f, "-") || strings.Contains(f, "=") {
			continue
		}
		return lookPath(f, env)
	}
	return ""
}

// lookPath finds name in env's PATH as env(1) in the sandbox would.
func lookPath(name string, env []string) string {
	if strings.Contains(name, "/") {
		return name
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// outermost drops the paths under another one of the list, and repeats.
func outermost(paths []string) []string {
	var out []string
	for i, p := range paths {
		inner := false
		for j, q := range paths {
			if q != p && under(p, []string{q}) || q == p && j < i {
				inner = true
				break
			}
		}
		if !inner {
			out = append(out, p)
		}
	}
	return out
}

// closedToStranger reports whether a directory above path (or path's own
// components) cannot be searched by a process that owns nothing on the
// host and has no group: the mapped root.
func closedToStranger(path string) bool {
	a := "/"
	for _, c := range splitPath(path) {
		var st unix.Stat_t
		if err := unix.Stat(a, &st); err != nil || st.Mode&unix.S_IXOTH == 0 {
			return true
		}
		a = filepath.Join(a, c)
	}
	return false
}

// openReached is a read-only copy of the mount tree at path, detached,
// for the helper to mount in place: the mapped root reads there what any
// user may read, and writes nothing.
func openReached(path string) (*os.File, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return nil, &os.PathError{Op: "open_tree", Path: path, Err: err}
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "mount_setattr", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), "reached "+path), nil
}

// reach opens what the mapped root must read but cannot reach: the
// program's install and the read paths, each below a directory closed to
// it and not inside a write path (whose tree it reaches already). path is
// what the helper executes: the program's own file, links resolved, when
// the name it was given lies in such a place.
func (s *Sandbox) reach(prog string, env []string, m idMapping, read, write []string) (path string, reach []string, err error) {
	if !m.mapped {
		return prog, nil, nil
	}
	path = prog
	if closedToStranger(prog) {
		if real, err := filepath.EvalSymlinks(prog); err == nil {
			path = real
		}
	}
	for _, r := range append(programPaths(prog, env), read...) {
		if under(r, write) || slices.Contains(reach, r) || !closedToStranger(r) {
			continue
		}
		f, err := openReached(r)
		if err != nil {
			return "", nil, fmt.Errorf("sandbox: running as root, the step's root is mapped to uid %d, which cannot reach %s: %w", MappedRoot, r, err)
		}
		s.trees = append(s.trees, f)
		reach = append(reach, r)
	}
	return path, reach, nil
}

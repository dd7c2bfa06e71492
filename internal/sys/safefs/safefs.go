// Package safefs creates, opens, replaces, renames and removes runner's
// own files (a run's blackboard.json, journal, lock, reports) in a
// directory a step may also write. A step can plant a symbolic link, a
// directory, a FIFO or a hard link where runner is about to make one of
// its files; every operation here acts on the name in its directory
// without following a link at it, opens only a regular file with one
// name, and never blocks on a FIFO, so what a step planted makes the
// operation fail with an error naming the file and what was found there
// (or, for a replacement, is replaced), and nothing outside is written.
//
// The directory itself is reached by its path: it is runner's (the run's
// directory, or one the user named), not the step's.
//
// It may import the standard library and golang.org/x/sys only: board
// and boardlock, which import little of runner's, use it.
package safefs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// FoundError says that where runner keeps a regular file of its own,
// something else was found: it was not followed, opened or written.
type FoundError struct {
	Path  string
	Found string // "a symbolic link to /etc/passwd", "a directory", ...
	// Dir: runner was making a directory there (MkdirAll).
	Dir bool
}

func (e *FoundError) Error() string {
	if e.Dir {
		return fmt.Sprintf("%s: found %s there, where runner makes a directory: not followed", e.Path, e.Found)
	}
	return fmt.Sprintf("%s: found %s there, where runner keeps a file of its own: not followed, opened or written", e.Path, e.Found)
}

// WriteFile replaces the file at path with what write writes: a new file
// beside it (made exclusively, never through a link), synced, given perm
// and renamed over path, then the directory synced. Readers see the old
// file or the new one, never half of one. Whatever stood at path (a
// link, a FIFO) is replaced, not followed; a directory or a device there
// is an error.
func WriteFile(path string, perm os.FileMode, write func(io.Writer) error) error {
	d, err := openDir(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.close()
	return d.writeFile(filepath.Base(path), path, perm, true, write)
}

// WriteOutput writes a file a person named (a report, JUnit XML, a
// trace): a device or a named pipe there, reached through links as a
// shell's redirection would (/dev/null, /dev/stdout, a pipe from `>(cmd)`),
// is written through; anything else is replaced as WriteFile does.
func WriteOutput(path string, perm os.FileMode, write func(io.Writer) error) error {
	if fi, err := os.Stat(path); err == nil && fi.Mode()&(os.ModeCharDevice|os.ModeDevice|os.ModeNamedPipe) != 0 {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		if err := write(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	return WriteFile(path, perm, write)
}

// Replace is WriteFileBytes without the syncs, for a file that only shows
// a state a crash makes stale anyway (the steps running now), rewritten
// at every step's start and end: readers still see the old file or the
// new one whole, but a power loss may leave either.
func Replace(path string, data []byte, perm os.FileMode) error {
	d, err := openDir(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.close()
	return d.writeFile(filepath.Base(path), path, perm, false, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFileBytes is WriteFile with data as the content.
func WriteFileBytes(path string, data []byte, perm os.FileMode) error {
	return WriteFile(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// OpenFile opens the regular file at path with flag (os.O_*) and perm as
// os.OpenFile does, except that it fails with a *FoundError when path is a
// symbolic link, a directory, a FIFO, a device, a socket or a file with
// more than one name (a hard link a step could have made to a file
// outside); O_TRUNC truncates only once that is checked.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	d, err := openDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer d.close()
	return d.openFile(filepath.Base(path), path, flag, perm)
}

// Remove removes the file (or whatever non-directory) at path; a link is
// removed, not what it points at. A directory there is an error.
func Remove(path string) error {
	d, err := openDir(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.close()
	return d.remove(filepath.Base(path), path)
}

// Rename renames oldpath to newpath, neither followed if a link; what
// stood at newpath is replaced, unless it is a directory (an error).
func Rename(oldpath, newpath string) error {
	od, err := openDir(filepath.Dir(oldpath))
	if err != nil {
		return err
	}
	defer od.close()
	nd, err := openDir(filepath.Dir(newpath))
	if err != nil {
		return err
	}
	defer nd.close()
	return rename(od, filepath.Base(oldpath), nd, filepath.Base(newpath), oldpath, newpath)
}

// MkdirAll makes the directory path and the missing ones above it, as
// os.MkdirAll does, except that below base no symbolic link is followed:
// a link there (one a step planted where runner is about to make a
// directory it will open to the step), or a file where a directory
// should be, is a *FoundError naming it, and nothing is made through it.
// base is runner's (a workdir) and reached by its path; path must be
// base or below it. base "" is the nearest directory above path that
// exists: only what MkdirAll makes is then walked without following.
func MkdirAll(base, path string, perm os.FileMode) error {
	path = filepath.Clean(path)
	if base == "" {
		base = path
		for {
			if _, err := os.Stat(base); err == nil || filepath.Dir(base) == base {
				break
			}
			base = filepath.Dir(base)
		}
	}
	rel, err := filepath.Rel(base, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("safefs: %s is not below %s", path, base)
	}
	if rel == "." {
		return nil
	}
	return mkdirAll(base, strings.Split(rel, string(filepath.Separator)), perm)
}

// Chmod sets the mode of the file at path, refusing a symbolic link
// there. A link swapped in between the check and the change is changed
// itself, or stays within the directory (os.Root.Chmod).
func Chmod(path string, mode os.FileMode) error {
	r, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer r.Close()
	base := filepath.Base(path)
	fi, err := r.Lstat(base)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return &FoundError{Path: path, Found: describe(fi, path)}
	}
	return r.Chmod(base, mode)
}

// Found is a *FoundError naming what is at path when that is not what
// runner expects there (want: os.ModeSocket, say, or 0 for a regular
// file); nil when it is, or when nothing is there.
func Found(path string, want os.FileMode) error {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() == want {
		return nil
	}
	return &FoundError{Path: path, Found: describe(fi, path)}
}

// describe names what fi (from Lstat of path) is, for a FoundError.
func describe(fi os.FileInfo, path string) string {
	m := fi.Mode()
	switch {
	case m&os.ModeSymlink != 0:
		if to, err := os.Readlink(path); err == nil {
			return "a symbolic link to " + to
		}
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	case m.IsRegular():
		if n := links(fi); n > 1 {
			return fmt.Sprintf("a file with %d names (a hard link)", n)
		}
		return "a regular file"
	}
	return "a special file (" + m.String() + ")"
}

//go:build !unix

package safefs

import (
	"io"
	"os"
	"path/filepath"
)

// dir is an open directory (os.Root: no name in it leads out of it).
// Without openat's O_NOFOLLOW, a link at the last name is refused after a
// look at it; that look and the operation are two steps.
type dir struct {
	r    *os.Root
	path string
}

func openDir(path string) (*dir, error) {
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	return &dir{r: r, path: path}, nil
}

func (d *dir) close() { d.r.Close() }

// check refuses whatever is at name but a regular file (or nothing).
func (d *dir) check(name, path string) error {
	fi, err := d.r.Lstat(name)
	if err != nil || fi.Mode().IsRegular() {
		return nil
	}
	return &FoundError{Path: path, Found: describe(fi, path)}
}

func (d *dir) openFile(name, path string, flag int, perm os.FileMode) (*os.File, error) {
	if err := d.check(name, path); err != nil {
		return nil, err
	}
	return d.r.OpenFile(name, flag, perm)
}

func (d *dir) writeFile(name, path string, perm os.FileMode, durable bool, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(d.path, "."+name+".tmp-*")
	if err != nil {
		return err
	}
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := write(tmp); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fail(err)
	}
	if durable {
		if err := tmp.Sync(); err != nil {
			return fail(err)
		}
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := rename(d, filepath.Base(tmp.Name()), d, name, tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

func (d *dir) remove(name, path string) error {
	if fi, err := d.r.Lstat(name); err == nil && fi.IsDir() {
		return &FoundError{Path: path, Found: "a directory"}
	}
	return d.r.Remove(name)
}

func rename(od *dir, oname string, nd *dir, nname, opath, npath string) error {
	if fi, err := nd.r.Lstat(nname); err == nil && fi.IsDir() {
		return &FoundError{Path: npath, Found: "a directory"}
	}
	return os.Rename(opath, npath)
}

// links: without a portable link count, one.
func links(os.FileInfo) uint64 { return 1 }

// mkdirAll walks names below base in an os.Root, looking at each before
// making it or going on; a link is refused (the look and the step are
// two operations here).
func mkdirAll(base string, names []string, perm os.FileMode) error {
	r, err := os.OpenRoot(base)
	if err != nil {
		return err
	}
	defer r.Close()
	rel := ""
	for _, name := range names {
		rel = filepath.Join(rel, name)
		path := filepath.Join(base, rel)
		fi, err := r.Lstat(rel)
		if os.IsNotExist(err) {
			if err := r.Mkdir(rel, perm); err != nil && !os.IsExist(err) {
				return err
			}
			fi, err = r.Lstat(rel)
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return &FoundError{Path: path, Found: describe(fi, path), Dir: true}
		}
	}
	return nil
}

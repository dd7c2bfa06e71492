package patch

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
)

// tree is the directory a diff applies to. It opens one os.Root per
// directory it is asked about, once that directory and every one above it
// were found to be real directories (not links), and runs each operation
// on a file as one system call on its directory. os.Root alone walks every
// component of a path, at every call; and holding the checked directory
// itself means that a directory swapped for a link later cannot redirect
// a write.
type tree struct {
	root  *os.Root
	mu    sync.Mutex
	dirs  map[string]*os.Root  // "" is the top
	files map[string]dirHandle // directories opened as files, for the *at calls
	stage staging              // this apply's temporary files (staging.go)
	// inUse holds a shared lock on the backup this apply made or this
	// rollback reads, so that no other apply prunes it meanwhile
	// (prune.go).
	inUse *os.File
	// umask is the process's, read once per apply (-1: unknown), so new
	// files whose mode it leaves whole are made with it (writeFast).
	umask int
	// deferSync: stageOne writes new contents without an fsync each, and
	// syncStaged makes them durable at once before the first rename
	// (syncfs.go); unsynced says some were.
	deferSync bool
	unsynced  atomic.Bool
}

// dirHandle is a directory opened as a file and its descriptor, taken
// once: (*os.File).Fd puts the file in blocking mode with two fcntl calls
// each time it is called, which per file read, written, linked and
// renamed added up to 8,500 system calls on a 3,000-file diff.
type dirHandle struct {
	f  *os.File
	fd uintptr
}

// maxOpenDirs bounds the directories kept open (each may take two
// descriptors). Past it, operations go through the top Root with whole
// paths: slower, as safe. (A variable for tests.)
var maxOpenDirs = dirBudget()

func newTree(root *os.Root) *tree {
	return &tree{root: root, dirs: map[string]*os.Root{"": root}, umask: processUmask()}
}

// close closes the directories opened (not the top Root).
func (t *tree) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for d, r := range t.dirs {
		if d != "" {
			r.Close()
		}
	}
	for _, h := range t.files {
		h.f.Close()
	}
	t.dirs, t.files = map[string]*os.Root{"": t.root}, nil
	if t.inUse != nil {
		t.inUse.Close()
		t.inUse = nil
	}
}

// dirFD returns the descriptor of directory d, opened as a file on its
// checked Root (so it is that very directory); ok is false when d does
// not exist or too many directories are open.
func (t *tree) dirFD(d string) (fd uintptr, ok bool, err error) {
	h, err := t.dirHandle(d)
	return h.fd, h.f != nil, err
}

// dirHandle is dirFD's handle; its f is nil when there is none.
func (t *tree) dirHandle(d string) (dirHandle, error) {
	r, full, err := t.dir(d)
	if err != nil || r == nil || full {
		return dirHandle{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, ok := t.files[d]; ok {
		return h, nil
	}
	f, err := r.Open(".")
	if err != nil {
		return dirHandle{}, err
	}
	if t.files == nil {
		t.files = map[string]dirHandle{}
	}
	h := dirHandle{f: f, fd: f.Fd()}
	t.files[d] = h
	return h, nil
}

func split(p string) (dir, base string) {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

// dir returns directory d's Root, or nil when d does not exist. full is
// true when the cache is full: the caller must then use the top Root and
// whole paths (the directory was checked all the same).
func (t *tree) dir(d string) (r *os.Root, full bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dirLocked(d)
}

func (t *tree) dirLocked(d string) (*os.Root, bool, error) {
	if r, ok := t.dirs[d]; ok {
		return r, false, nil
	}
	if len(t.dirs) >= maxOpenDirs {
		fi, _, err := lstatWalk(t.root, d, true)
		if err != nil || fi == nil {
			return nil, false, err
		}
		return t.root, true, nil
	}
	parent, name := split(d)
	pr, full, err := t.dirLocked(parent)
	if err != nil || pr == nil {
		return nil, false, err
	}
	if full {
		return t.dirLocked(d) // checked by the walk above
	}
	fi, err := pr.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, false, refuse(Unsafe, "%s is a symbolic link; the diff may not write through links", d)
	}
	if !fi.IsDir() {
		return nil, false, refuse(Unsafe, "%s is not a directory", d)
	}
	r, err := pr.OpenRoot(name)
	if err != nil {
		return nil, false, err
	}
	t.dirs[d] = r
	return r, false, nil
}

// at returns the Root and the name to operate on p with; r is nil when
// p's directory does not exist.
func (t *tree) at(p string) (r *os.Root, name string, err error) {
	d, base := split(p)
	r, full, err := t.dir(d)
	if full {
		return t.root, p, err
	}
	return r, base, err
}

// lstat looks at p without following any link: every directory on the way
// must be a real one, and p itself, if it exists, a regular file. A
// missing p gives (nil, nil); missing is then its first missing parent
// directory ("" when all exist), so a create knows what to make.
func (t *tree) lstat(p string) (fi fs.FileInfo, missing string, err error) {
	r, name, err := t.at(p)
	if err != nil {
		return nil, "", pathErr(p, err)
	}
	if r == nil {
		parts := strings.Split(p, "/")
		for i := 1; i < len(parts); i++ {
			sub := strings.Join(parts[:i], "/")
			if r, _, err := t.dir(sub); err != nil || r == nil {
				return nil, sub, pathErr(p, err)
			}
		}
		return nil, "", nil
	}
	fi, err = t.lstatIn(p, r, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", nil
	case err != nil:
		return nil, "", err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, "", refuse(Unsafe, "%s is a symbolic link; the diff may not write through links", p)
	case !fi.Mode().IsRegular():
		return nil, "", refuse(Unsafe, "%s is not a regular file", p)
	}
	return fi, "", nil
}

// pathErr names p in a refusal about one of its directories.
func pathErr(p string, err error) error {
	var re *RefusedError
	if errors.As(err, &re) && !strings.HasPrefix(re.Msg, p+":") {
		return &RefusedError{Kind: re.Kind, Msg: p + ": " + re.Msg}
	}
	return err
}

// fileBufs holds read buffers given back once their file is settled (see
// settle): reading thousands of files then makes little garbage, and the
// heap stays near what is live instead of growing by what the collector
// has not caught up with yet.
var fileBufs sync.Pool

// getBuf is a buffer of len size (and room for one more byte).
func getBuf(size int64) []byte {
	if bp, _ := fileBufs.Get().(*[]byte); bp != nil && int64(cap(*bp)) > size {
		return (*bp)[:size]
	}
	return make([]byte, size, max(size+1, 64<<10, size+size/4))
}

// putBuf gives b back for another file. Nothing may refer to b after.
func putBuf(b []byte) {
	if cap(b) > 0 && cap(b) <= 4<<20 {
		fileBufs.Put(&b)
	}
}

// readRegular reads p, which must be a regular file reached without links.
func (t *tree) readRegular(p string) ([]byte, error) {
	fi, _, err := t.lstat(p)
	if err != nil {
		return nil, err
	}
	if fi == nil {
		return nil, &fs.PathError{Op: "read", Path: p, Err: fs.ErrNotExist}
	}
	return t.readFile(p, fi.Size())
}

// readFile reads p, expected to be size bytes, into a buffer of exactly
// that size when it is (os.ReadFile's buffer has room to spare, which over
// thousands of files adds up).
func (t *tree) readFile(p string, size int64) ([]byte, error) {
	if b, ok, err := t.readFast(p, size); ok {
		return b, err
	}
	r, name, err := t.at(p)
	if err == nil && r == nil {
		err = &fs.PathError{Op: "read", Path: p, Err: fs.ErrNotExist}
	}
	if err != nil {
		return nil, err
	}
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, size)
	n, err := io.ReadFull(f, b)
	switch {
	case err == io.ErrUnexpectedEOF || err == io.EOF:
		return b[:n], nil // it shrank
	case err != nil:
		return nil, err
	}
	var one [1]byte
	if m, _ := f.Read(one[:]); m == 0 {
		return b, nil
	}
	rest, err := io.ReadAll(f) // it grew
	return append(append(b, one[0]), rest...), err
}

func (t *tree) remove(p string) error {
	r, name, err := t.at(p)
	if err == nil && r == nil {
		return nil
	}
	if err != nil {
		return err
	}
	return r.Remove(name)
}

// rename moves old to p; both are in the same directory.
func (t *tree) rename(old, p string) error {
	r, name, err := t.at(p)
	if err == nil && r == nil {
		err = &fs.PathError{Op: "rename", Path: p, Err: fs.ErrNotExist}
	}
	if err != nil {
		return err
	}
	if name == p {
		return r.Rename(old, p)
	}
	_, oldName := split(old)
	return r.Rename(oldName, name)
}

func (t *tree) mkdir(d string) error {
	r, name, err := t.at(d)
	if err == nil && r == nil {
		err = &fs.PathError{Op: "mkdir", Path: d, Err: fs.ErrNotExist}
	}
	if err != nil {
		return err
	}
	return r.Mkdir(name, 0o755)
}

// mkdirAll makes directory p and those above it that are missing, each
// with one mkdirat on its parent's handle, refusing a link or a file on
// the way (os.Root.MkdirAll follows links inside the root).
func (t *tree) mkdirAll(p string) error {
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		sub := p[:i]
		r, _, err := t.dir(sub)
		if err != nil {
			return err
		}
		if r == nil {
			if err := t.mkdir(sub); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		}
	}
	return nil
}

// writeTemp writes data to a new file tmp with mode, synced.
func (t *tree) writeTemp(tmp string, data []byte, mode fs.FileMode) error {
	return t.writeNew(tmp, data, mode, true)
}

// writeNew writes data to a new file tmp with mode, synced unless sync
// is false (then syncStaged must run before tmp is renamed anywhere).
func (t *tree) writeNew(tmp string, data []byte, mode fs.FileMode, sync bool) error {
	if !sync {
		t.unsynced.Store(true)
	}
	if ok, err := t.writeFast(tmp, data, mode, sync); ok {
		return err
	}
	r, name, err := t.at(tmp)
	if err == nil && r == nil {
		err = &fs.PathError{Op: "create", Path: tmp, Err: fs.ErrNotExist}
	}
	if err != nil {
		return err
	}
	f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = r.Remove(name)
	}
	return err
}

// writeAtomic replaces p with data: a temporary file in the staging
// directory, synced, then renamed over p. A rename replaces a link rather
// than writing through it, and readers never see half a file.
func (t *tree) writeAtomic(p string, data []byte, mode fs.FileMode) error {
	tmp, err := t.tempPath()
	if err != nil {
		return err
	}
	if err := t.writeTemp(tmp, data, mode); err != nil {
		return err
	}
	if err := t.commitRename(tmp, p, mode); err != nil {
		_ = t.remove(tmp)
		return err
	}
	return nil
}

// syncDirs makes the directories' entries (renames, links) durable, each
// once, in parallel. A failure is not worth undoing a finished apply for,
// so it is ignored.
func (t *tree) syncDirs(dirs []string) {
	seen := map[string]bool{}
	var list []string
	for _, d := range dirs {
		if d == "." {
			d = ""
		}
		if !seen[d] {
			seen[d] = true
			list = append(list, d)
		}
	}
	parallel(len(list), func(i int) {
		// The handle the files were read, linked and renamed through,
		// most often: no second open of the directory.
		if h, err := t.dirHandle(list[i]); err == nil && h.f != nil {
			_ = h.f.Sync()
			return
		}
		r, full, err := t.dir(list[i])
		if err != nil || r == nil {
			return
		}
		name := "."
		if full {
			name = list[i]
		}
		if f, err := r.Open(name); err == nil {
			_ = f.Sync()
			_ = f.Close()
		}
	})
}

// dirOf is p's directory as tree names it ("" for the top).
func dirOf(p string) string {
	d := path.Dir(p)
	if d == "." {
		return ""
	}
	return d
}

// forget closes the Roots of d and of the directories under it, which are
// about to be removed.
func (t *tree) forget(d string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	under := func(k string) bool { return k != "" && (k == d || strings.HasPrefix(k, d+"/")) }
	for k, r := range t.dirs {
		if under(k) {
			r.Close()
			delete(t.dirs, k)
		}
	}
	for k, h := range t.files {
		if under(k) {
			h.f.Close()
			delete(t.files, k)
		}
	}
}

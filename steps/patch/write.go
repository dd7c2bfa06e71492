package patch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"sync"
)

// changes are the targets whose content the apply changes.
func (p *planner) changes() []*target {
	var out []*target
	for _, t := range p.order {
		switch t.op() {
		case "create", "delete":
			out = append(out, t)
		case "modify":
			if string(t.data) != string(t.orig) {
				out = append(out, t)
			}
		}
	}
	return out
}

// write makes the planned changes in three steps. Backups and the new
// contents go to temporary files first, synced in parallel (fsync is the
// slow part); a failure there leaves the tree as it was. Then each file is
// renamed into place (or deleted) in order, checking ctx between files;
// if a rename fails or ctx ends, the files already changed are put back
// from memory.
func (p *planner) write(ctx context.Context) (string, error) {
	ts := p.changes()
	backup := ""
	var made []string // directories the backup made
	if !p.opt.NoBackup {
		var err error
		if backup, made, err = writeBackup(p.root, p.opt.BackupID, ts); err != nil {
			return "", err
		}
	}
	// A backup of a change that did not happen is clutter, unless the
	// tree could not be restored: then it is the way back.
	drop := func() {
		if backup != "" {
			_ = p.root.RemoveAll(backup)
			removeDirs(p.root, made)
		}
	}
	tmps, err := stage(p.root, ts)
	if err != nil {
		drop()
		return "", err
	}
	var done []*target
	for i, t := range ts {
		if testHook != nil {
			testHook("commit", t.path)
		}
		err := ctx.Err()
		if err != nil {
			err = fmt.Errorf("patch: interrupted: %w", context.Cause(ctx))
		} else {
			err = commit(p.root, t, tmps[i])
		}
		if err != nil {
			for _, tmp := range tmps[i:] {
				if tmp != "" {
					_ = p.root.Remove(tmp)
				}
			}
			for _, t := range ts[i:] {
				removeDirs(p.root, t.dirs)
			}
			if rerr := restore(p.root, done); rerr != nil {
				if backup != "" {
					return "", fmt.Errorf("%w; restoring the files changed before failed too (%v); the originals are in %s", err, rerr, backup)
				}
				return "", fmt.Errorf("%w; restoring the files changed before failed too: %v", err, rerr)
			}
			drop()
			if len(done) == 0 {
				return "", fmt.Errorf("%w (nothing was changed)", err)
			}
			return "", fmt.Errorf("%w (the %d file(s) changed before were restored)", err, len(done))
		}
		done = append(done, t)
	}
	syncDirs(p.root, ts)
	return backup, nil
}

// testHook, when set by a test, runs before each file is staged and
// before each is committed: the place to inject a failure or an
// interruption between files.
var testHook func(phase, path string)

// stage writes each new content to a synced temporary file beside its
// target and returns their names ("" for deletions).
func stage(root *os.Root, ts []*target) ([]string, error) {
	tmps := make([]string, len(ts))
	for i, t := range ts {
		if testHook != nil {
			testHook("stage", t.path)
		}
		if err := checkStill(root, t); err != nil {
			return nil, unstage(root, ts, tmps, fmt.Errorf("patch: %s: %w", t.path, err))
		}
		if t.cur == nil {
			continue
		}
		for _, d := range t.dirs {
			if err := root.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, unstage(root, ts, tmps, fmt.Errorf("patch: %s: %w", t.path, err))
			}
		}
		tmps[i] = tempName(t.path)
	}
	errs := make([]error, len(ts))
	parallel(len(ts), func(i int) {
		if tmps[i] != "" {
			errs[i] = writeTemp(root, tmps[i], ts[i].data, ts[i].mode)
		}
	})
	for i, err := range errs {
		if err != nil {
			return nil, unstage(root, ts, tmps, fmt.Errorf("patch: %s: %w", ts[i].path, err))
		}
	}
	return tmps, nil
}

func unstage(root *os.Root, ts []*target, tmps []string, cause error) error {
	for _, tmp := range tmps {
		if tmp != "" {
			_ = root.Remove(tmp)
		}
	}
	for _, t := range slices.Backward(ts) {
		removeDirs(root, t.dirs)
	}
	return cause
}

// checkStill makes sure, right before writing, that the path is still what
// was planned for: no link has appeared on the way, and a new file has
// not appeared meanwhile.
func checkStill(root *os.Root, t *target) error {
	fi, _, err := lstat(root, t.path)
	var re *RefusedError
	switch {
	case errors.As(err, &re):
		// Not the diff's fault: the tree changed while it was applied.
		return fmt.Errorf("changed while the diff was being applied: %s", re.Msg)
	case err != nil:
		return err
	case fi != nil && !t.existed:
		return fmt.Errorf("%w: it appeared while the diff was being applied", fs.ErrExist)
	}
	return nil
}

func commit(root *os.Root, t *target, tmp string) error {
	if err := checkStill(root, t); err != nil {
		return fmt.Errorf("patch: %s: %w", t.path, err)
	}
	var err error
	if t.cur == nil {
		err = root.Remove(t.path)
	} else {
		err = root.Rename(tmp, t.path)
	}
	if err != nil {
		return fmt.Errorf("patch: %s: %w", t.path, err)
	}
	return nil
}

// parallel runs f(0..n-1) on a few goroutines: enough to overlap fsyncs,
// few enough not to flood the disk.
func parallel(n int, f func(i int)) {
	const workers = 8
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

func tempName(p string) string {
	dir, base := path.Split(p)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	return dir + "." + base + ".runner-" + hex.EncodeToString(rnd[:]) + ".tmp"
}

// writeTemp writes data to a new file tmp with mode, synced.
func writeTemp(root *os.Root, tmp string, data []byte, mode fs.FileMode) error {
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}

// writeAtomic replaces p with data: a temporary file in the same directory,
// synced, then renamed over p. A rename replaces a link rather than writing
// through it, and readers never see half a file.
func writeAtomic(root *os.Root, p string, data []byte, mode fs.FileMode) error {
	tmp := tempName(p)
	if err := writeTemp(root, tmp, data, mode); err != nil {
		return err
	}
	if err := root.Rename(tmp, p); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	return nil
}

// restore puts targets back as they were, last first, and removes the
// directories that creates made.
func restore(root *os.Root, ts []*target) error {
	var errs []error
	for _, t := range slices.Backward(ts) {
		if t.existed {
			errs = append(errs, putBack(root, t.path, t.orig, t.mode))
		} else {
			errs = append(errs, removeFile(root, t.path))
		}
	}
	for _, t := range slices.Backward(ts) {
		removeDirs(root, t.dirs)
	}
	return errors.Join(errs...)
}

func putBack(root *os.Root, p string, data []byte, mode fs.FileMode) error {
	_, missing, err := lstat(root, p)
	if err != nil {
		return err
	}
	if missing != "" {
		if err := root.MkdirAll(path.Dir(p), 0o755); err != nil {
			return err
		}
	}
	return writeAtomic(root, p, data, mode)
}

func removeFile(root *os.Root, p string) error {
	fi, _, err := lstat(root, p)
	if err != nil || fi == nil {
		return err
	}
	return root.Remove(p)
}

// removeDirs removes dirs, innermost first, where they are empty.
func removeDirs(root *os.Root, dirs []string) {
	for _, d := range slices.Backward(dirs) {
		if fi, err := root.Lstat(d); err == nil && fi.IsDir() {
			_ = root.Remove(d) // fails, as it should, when not empty
		}
	}
}

// syncDirs makes the renames durable. A failure here is not worth undoing
// a finished apply for, so it is ignored.
func syncDirs(root *os.Root, ts []*target) {
	seen := map[string]bool{}
	for _, t := range ts {
		d := path.Dir(t.path)
		if seen[d] {
			continue
		}
		seen[d] = true
		if f, err := root.Open(d); err == nil {
			_ = f.Sync()
			_ = f.Close()
		}
	}
}

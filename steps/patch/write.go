package patch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
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
			if string(t.data) != string(t.orig) || t.mode != t.oldMode {
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
		if backup, made, err = writeBackup(p.tree, p.opt.BackupID, ts); err != nil {
			return "", err
		}
	}
	// A backup of a change that did not happen is clutter, unless the
	// tree could not be restored: then it is the way back.
	drop := func() {
		if backup != "" {
			_ = p.tree.root.RemoveAll(backup)
			removeDirs(p.tree, made)
		}
	}
	tmps, err := stage(p.tree, ts)
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
			err = commit(p.tree, t, tmps[i])
		}
		if err != nil {
			unstage(p.tree, ts[i:], tmps[i:])
			if rerr := restore(p.tree, done); rerr != nil {
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
	var dirs []string
	for _, t := range ts {
		dirs = append(dirs, dirOf(t.path))
	}
	p.tree.syncDirs(dirs)
	return backup, nil
}

// testHook, when set by a test, runs before each file is staged and
// before each is committed: the place to inject a failure or an
// interruption between files.
var testHook func(phase, path string)

// stage writes each new content to a synced temporary file beside its
// target and returns their names ("" for deletions).
func stage(t *tree, ts []*target) ([]string, error) {
	tmps := make([]string, len(ts))
	for i, tg := range ts {
		if testHook != nil {
			testHook("stage", tg.path)
		}
		if err := checkStill(t, tg); err != nil {
			return nil, unstage(t, ts, tmps, fmt.Errorf("patch: %s: %w", tg.path, err))
		}
		if !tg.exists {
			continue
		}
		for _, d := range tg.dirs {
			if err := t.mkdir(d); err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, unstage(t, ts, tmps, fmt.Errorf("patch: %s: %w", tg.path, err))
			}
		}
		tmps[i] = tempName(tg.path)
	}
	errs := make([]error, len(ts))
	parallel(len(ts), func(i int) {
		if tmps[i] != "" {
			errs[i] = t.writeTemp(tmps[i], ts[i].data, ts[i].mode)
		}
	})
	for i, err := range errs {
		if err != nil {
			return nil, unstage(t, ts, tmps, fmt.Errorf("patch: %s: %w", ts[i].path, err))
		}
	}
	return tmps, nil
}

// unstage removes temporary files and the directories made for them, and
// passes cause on (if any).
func unstage(t *tree, ts []*target, tmps []string, cause ...error) error {
	for _, tmp := range tmps {
		if tmp != "" {
			_ = t.remove(tmp)
		}
	}
	for _, tg := range slices.Backward(ts) {
		removeDirs(t, tg.dirs)
	}
	return errors.Join(cause...)
}

// checkStill makes sure, right before writing, that the path is still what
// was planned for: not a link, and a new file has not appeared meanwhile.
// (Its directories are held open since they were checked.)
func checkStill(t *tree, tg *target) error {
	fi, _, err := t.lstat(tg.path)
	var re *RefusedError
	switch {
	case errors.As(err, &re):
		// Not the diff's fault: the tree changed while it was applied.
		return fmt.Errorf("changed while the diff was being applied: %s", re.Msg)
	case err != nil:
		return err
	case fi != nil && !tg.existed:
		return fmt.Errorf("%w: it appeared while the diff was being applied", fs.ErrExist)
	}
	return nil
}

func commit(t *tree, tg *target, tmp string) error {
	if err := checkStill(t, tg); err != nil {
		return fmt.Errorf("patch: %s: %w", tg.path, err)
	}
	var err error
	if !tg.exists {
		err = t.remove(tg.path)
	} else {
		err = t.rename(tmp, tg.path)
	}
	if err != nil {
		return fmt.Errorf("patch: %s: %w", tg.path, err)
	}
	return nil
}

// parallel runs f(0..n-1) on a few goroutines: enough to overlap fsyncs,
// few enough not to flood the disk.
func parallel(n int, f func(i int)) {
	const workers = 8
	if n == 1 {
		f(0)
		return
	}
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
	dir, base := split(p)
	if dir != "" {
		dir += "/"
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	return dir + "." + base + ".runner-" + hex.EncodeToString(rnd[:]) + ".tmp"
}

// restore puts targets back as they were, last first, and removes the
// directories that creates made.
func restore(t *tree, ts []*target) error {
	var errs []error
	for _, tg := range slices.Backward(ts) {
		if tg.existed {
			errs = append(errs, putBack(t, tg.path, tg.orig, tg.mode))
		} else {
			errs = append(errs, removeFile(t, tg.path))
		}
	}
	for _, tg := range slices.Backward(ts) {
		removeDirs(t, tg.dirs)
	}
	return errors.Join(errs...)
}

func putBack(t *tree, p string, data []byte, mode fs.FileMode) error {
	_, missing, err := t.lstat(p)
	if err != nil {
		return err
	}
	if missing != "" {
		if err := t.root.MkdirAll(dirOf(p), 0o755); err != nil {
			return err
		}
	}
	return t.writeAtomic(p, data, mode)
}

func removeFile(t *tree, p string) error {
	fi, _, err := t.lstat(p)
	if err != nil || fi == nil {
		return err
	}
	return t.remove(p)
}

// removeDirs removes dirs, innermost first, where they are empty.
func removeDirs(t *tree, dirs []string) {
	for _, d := range slices.Backward(dirs) {
		if fi, err := t.root.Lstat(d); err == nil && fi.IsDir() {
			t.forget(d)
			_ = t.root.Remove(d) // fails, as it should, when not empty
		}
	}
}

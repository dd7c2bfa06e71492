package patch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"sync/atomic"
)

// changes are the targets whose content the apply changes.
func (p *planner) changes() []*target {
	var out []*target
	for _, t := range p.order {
		switch t.op() {
		case "create", "delete":
			out = append(out, t)
		case "modify":
			if t.changed() || t.mode != t.oldMode {
				out = append(out, t)
			}
		}
	}
	return out
}

// write makes the planned changes in three steps. Backups and the new
// contents go to temporary files first, synced in parallel (fsync is the
// slow part; most files were staged already while planning, see settle);
// a failure there leaves the tree as it was. Then each file is renamed
// into place (or deleted) in order, checking ctx between files; if a
// rename fails or ctx ends, the files already changed are put back (from
// memory, or from the backup).
func (p *planner) write(ctx context.Context) (string, error) {
	ts := p.changes()
	backup := ""
	var made []string // directories the backup made
	if !p.opt.NoBackup {
		var err error
		if backup, made, err = writeBackup(ctx, p.tree, p.opt.BackupID, ts); err != nil {
			p.unstageAll()
			if ctx.Err() != nil {
				return "", stopped(ctx, "while keeping the backup")
			}
			return "", err
		}
	}
	// A backup of a change that did not happen is clutter, unless the
	// tree could not be restored: then it is the way back.
	drop := func() {
		if backup != "" {
			p.tree.forget(backup)
			_ = p.tree.root.RemoveAll(backup)
			removeDirs(p.tree, made)
		}
	}
	if err := stage(ctx, p.tree, ts); err != nil {
		p.unstageAll()
		drop()
		if ctx.Err() != nil {
			return "", stopped(ctx, "while writing the new contents")
		}
		return "", err
	}
	if err := p.tree.syncStaged(ts); err != nil {
		unstage(p.tree, ts)
		drop()
		return "", fmt.Errorf("patch: making the new contents durable: %w (nothing was changed)", err)
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
			err = commit(p.tree, t)
		}
		if err != nil {
			unstage(p.tree, ts[i:])
			if rerr := restore(p.tree, done, backup); rerr != nil {
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
	p.removeEmptied(ts)
	return backup, nil
}

// testHook, when set by a test, runs before each file is staged and
// before each is committed: the place to inject a failure or an
// interruption between files.
var testHook func(phase, path string)

// stage writes each new content not written yet to a synced temporary
// file in the staging directory (tg.tmp; none for deletions).
func stage(ctx context.Context, t *tree, ts []*target) error {
	var todo []*target
	for _, tg := range ts {
		if tg.tmp != "" {
			continue // staged while planning; commit checks it again
		}
		if testHook != nil {
			testHook("stage", tg.path)
		}
		if err := ctx.Err(); err != nil {
			return unstage(t, ts, err)
		}
		if err := checkStill(t, tg); err != nil {
			return unstage(t, ts, fmt.Errorf("patch: %s: %w", tg.path, err))
		}
		if !tg.exists {
			continue
		}
		for _, d := range tg.dirs {
			if err := t.mkdir(d); err != nil && !errors.Is(err, fs.ErrExist) {
				return unstage(t, ts, fmt.Errorf("patch: %s: %w", tg.path, err))
			}
		}
		todo = append(todo, tg)
	}
	errs := make([]error, len(todo))
	parallel(len(todo), func(i int) {
		if errs[i] = ctx.Err(); errs[i] == nil {
			errs[i] = stageOne(t, todo[i])
		}
	})
	for i, err := range errs {
		if err != nil {
			return unstage(t, ts, fmt.Errorf("patch: %s: %w", todo[i].path, err))
		}
	}
	return nil
}

// bufs are buffers for new contents, reused once a file is written, so
// that no more than a few new files are in memory at once.
var bufs = sync.Pool{New: func() any { return new([]byte) }}

// stageOne writes tg's new content to a new temporary file, tg.tmp, in
// the staging directory.
func stageOne(t *tree, tg *target) error {
	tmp, err := t.tempPath()
	if err != nil {
		return err
	}
	sync := !t.deferSync
	if tg.pend == nil {
		err = t.writeNew(tmp, tg.data, tg.mode, sync)
	} else {
		bp := bufs.Get().(*[]byte)
		*bp, _ = emitInto(*bp, tg.pend.c, tg.pend.pls, tg.pend.exact) // measured ok before
		err = t.writeNew(tmp, *bp, tg.mode, sync)
		if cap(*bp) > 4<<20 {
			*bp = nil // do not keep a huge buffer around
		}
		bufs.Put(bp)
	}
	if err == nil {
		tg.tmp = tmp
	}
	return err
}

// unstage removes temporary files and the directories made for them, and
// passes cause on (if any).
func unstage(t *tree, ts []*target, cause ...error) error {
	for _, tg := range ts {
		if tg.tmp != "" {
			_ = t.remove(tg.tmp)
			tg.tmp = ""
		}
	}
	for _, tg := range slices.Backward(ts) {
		removeDirs(t, tg.dirs)
	}
	return errors.Join(cause...)
}

// unstageAll removes every temporary file staged so far.
func (p *planner) unstageAll() { unstage(p.tree, p.order) }

// checkStill makes sure, right before writing, that the path is still what
// was planned for: not a link, and a new file has not appeared meanwhile.
// (Its directories are held open since they were checked.)
func checkStill(t *tree, tg *target) error {
	fi, _, err := t.lstat(tg.path)
	if err != nil {
		// re is declared here, not above: it escapes, and so cost an
		// allocation per file written.
		var re *RefusedError
		if errors.As(err, &re) {
			// Not the diff's fault: the tree changed while it was applied.
			return fmt.Errorf("changed while the diff was being applied: %s", re.Msg)
		}
		return err
	}
	if fi != nil && !tg.existed {
		return fmt.Errorf("%w: it appeared while the diff was being applied", fs.ErrExist)
	}
	return nil
}

func commit(t *tree, tg *target) error {
	if err := checkStill(t, tg); err != nil {
		return fmt.Errorf("patch: %s: %w", tg.path, err)
	}
	var err error
	if !tg.exists {
		err = t.remove(tg.path)
	} else {
		err = t.commitRename(tg.tmp, tg.path, tg.mode)
		if err == nil {
			tg.tmp = ""
		}
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
	// Workers take the next index from a counter. Handing each one over
	// a channel made every item a rendezvous between two goroutines: on
	// the 9.8 MB diff, about 5,000 futex calls and 5,000 sleeps of idle
	// threads looking for work, a visible share of the apply's CPU.
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

// restore puts targets back as they were, last first, and removes the
// directories that creates made. A content let go of while planning (see
// settle) is read back from the backup.
func restore(t *tree, ts []*target, backup string) error {
	var errs []error
	for _, tg := range slices.Backward(ts) {
		if tg.existed {
			orig, err := tg.original(t, backup)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, putBack(t, tg.path, orig, tg.oldMode))
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

// removeEmptied removes the directories that deleting files left empty,
// each up to the top as far as they are empty, as git does (never the
// directory itself). A rollback makes them again for the files it puts
// back.
func (p *planner) removeEmptied(ts []*target) {
	for _, tg := range ts {
		if !tg.existed || tg.exists {
			continue
		}
		for d := dirOf(tg.path); d != ""; d = dirOf(d) {
			p.tree.forget(d)
			if p.tree.root.Remove(d) != nil {
				break // not empty (or not ours to remove): stop here, as git does
			}
		}
	}
}

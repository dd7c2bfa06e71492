package patch

import (
	"context"
	"fmt"
	"os"
)

// DetectStrip asks Apply to find the strip level of each file from the
// paths that exist (a/x or x).
const DetectStrip = -1

// Default limits.
const (
	DefaultMaxBytes = 64 << 20
	DefaultMaxHunks = 100_000
)

// Options controls Apply. The zero value strips nothing (like patch -p0);
// set Strip to DetectStrip to have it found.
type Options struct {
	Strip    int    // leading path components to remove from names; DetectStrip: per file
	Reverse  bool   // apply the diff backwards
	Check    bool   // compute everything, write nothing
	NoBackup bool   // do not keep copies under .runner/backups
	BackupID string // backup directory name under .runner/backups; "" = a timestamp
	// KeepBackups is how many backups under .runner/backups an apply that
	// made one keeps, the newest; it prunes the older ones (prune.go).
	// 0 = DefaultKeepBackups; KeepAllBackups (negative) = no pruning.
	KeepBackups int
	MaxBytes    int64 // refuse larger diffs; 0 = DefaultMaxBytes
	MaxHunks    int   // refuse diffs with more hunks; 0 = DefaultMaxHunks
	// Format is the edit format of the text (formats.go): "" or
	// FormatUnified, or FormatAuto to read every format, mixed.
	Format string
	// Ended: whoever wrote the text says it ended there, whole (a model
	// whose provider reported a normal finish, not its token limit). A
	// last hunk that runs to the end of an unfenced diff is then read by
	// its body when its header miscounts it or gives no counts, as a hunk
	// with another after it is; every other check stays. A file carries
	// no such word, so `runner apply` leaves it false (truncate.go).
	Ended bool
}

// Result describes an apply (or, with Check, what it would do).
type Result struct {
	Files []FileResult `json:"files"`
	// BackupDir holds copies of the files as they were, relative to the
	// directory, in slash form; "" when nothing was written or backups are
	// off. Rollback restores it.
	BackupDir string       `json:"backup_dir"`
	Hunks     []HunkResult `json:"hunks"`
	// AlreadyApplied: every hunk's change was already there; nothing was
	// written.
	AlreadyApplied bool `json:"already_applied"`
	// Messages say what was tolerated: recounted hunks, repaired lines,
	// hunks placed away from their header's line.
	Messages []string `json:"messages,omitempty"`
}

// FileResult is one file the diff touches.
type FileResult struct {
	Path    string `json:"path"` // slash path relative to the directory
	Op      string `json:"op"`   // "modify", "create" or "delete"
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
	// Mode is the file's new permissions in octal ("0755") when the diff
	// changes them ("old mode"/"new mode"); "" otherwise.
	Mode string `json:"mode,omitempty"`
}

// HunkResult is where one hunk went.
type HunkResult struct {
	File       string `json:"file"`
	Line       int    `json:"line"`   // 1-based line of the hunk's first line in the file as it was
	Offset     int    `json:"offset"` // Line minus the line in the hunk's header
	Fuzz       int    `json:"fuzz"`   // context lines ignored; 0 means an exact match
	Whitespace bool   `json:"whitespace,omitempty"`
}

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxHunks <= 0 {
		o.MaxHunks = DefaultMaxHunks
	}
	if o.Strip < 0 {
		o.Strip = DetectStrip
	}
	return o
}

// Apply applies the unified diff in patch to the files under dir, all or
// nothing. The diff may be wrapped in prose or markdown fences. patch must
// not change while Apply runs (it is read in place, not copied).
//
// A *RefusedError means the diff was not applied because of what it says
// (unreadable, does not match, unsafe path); its message explains why in
// terms a model can act on. Other errors are I/O failures or ctx ending;
// after those, files already written have been restored.
func Apply(ctx context.Context, dir string, patch []byte, opt Options) (*Result, error) {
	opt = opt.withDefaults()
	if int64(len(patch)) > opt.MaxBytes {
		return nil, refuse(BadDiff, "the diff is %d bytes, over the limit of %d", len(patch), opt.MaxBytes)
	}
	if testHook != nil {
		testHook("parse", "")
	}
	fds, notes, err := parseEdits(ctx, patch, opt.Format, opt.MaxHunks, opt.Ended)
	if err != nil {
		return nil, err
	}
	if opt.Reverse {
		for _, f := range fds {
			if f.format != "" {
				return nil, refuse(BadDiff, "line %d: only a unified diff can be applied in reverse; this edit is %s", f.line, f.format)
			}
			f.reverse()
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("patch: %w", err)
	}
	defer root.Close()

	t := newTree(root)
	defer t.close()
	defer t.dropStaging()
	if !opt.Check {
		t.cleanStale()
		t.deferSync = haveSyncFS
	}
	pl := &planner{ctx: ctx, tree: t, opt: opt, detected: map[bool]int{}, stats: map[string]lstatResult{}, state: map[string]*target{}}
	if err := pl.plan(fds); err != nil {
		pl.unstageAll()
		if ctx.Err() != nil {
			return nil, stopped(ctx, "while reading the files")
		}
		return nil, err
	}
	res := pl.result()
	if len(notes) > 0 {
		res.Messages = append(notes[:min(len(notes), maxMessages)], res.Messages...)
		res.Messages = res.Messages[:min(len(res.Messages), 2*maxMessages)]
	}
	if res.AlreadyApplied || opt.Check {
		pl.unstageAll() // nothing is, but say so here too
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		pl.unstageAll()
		return nil, stopped(ctx, "before writing")
	}
	res.BackupDir, err = pl.write(ctx)
	if err != nil {
		return nil, err
	}
	if res.BackupDir != "" {
		res.Messages = append(res.Messages, pruneBackups(t, opt.KeepBackups, res.BackupDir)...)
	}
	return res, nil
}

// stopped is the error for an apply that ctx ended (Ctrl-C, SIGTERM, a
// step's timeout): nothing was changed.
func stopped(ctx context.Context, when string) error {
	return fmt.Errorf("patch: stopped %s, nothing was changed: %w", when, context.Cause(ctx))
}

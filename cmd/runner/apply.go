package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/planrunner/runner/internal/patch"
	"github.com/planrunner/runner/internal/sys/readlimit"
)

// pFlag reads patch's "-p1" spelling ("-p" or "--p" and digits), which the
// flag package would read as a flag named "p1", and returns the digits.
// (By hand: a regular expression compiled at start would cost every
// runner command.)
func pFlag(a string) (string, bool) {
	if strings.HasPrefix(a, "--") {
		a = a[1:]
	}
	if !strings.HasPrefix(a, "-p") || len(a) == 2 {
		return "", false
	}
	for _, c := range a[2:] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return a[2:], true
}

// cmdApply is `runner apply [--dir DIR] [-p N] [--check] [--reverse] PATCH|-`:
// the diff applier on its own, all or nothing, like git apply.
func cmdApply(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("apply", stdout, stderr)
	dir := fs.String("dir", ".", "the directory the diff's paths are relative to")
	var strip int64
	newOptInt(fs, &strip, "p", "remove `N` leading components from file names (default: found from the files that exist, a/x or x)")
	check := fs.Bool("check", false, "only check that the diff applies; change nothing")
	reverse := fs.Bool("reverse", false, "apply the diff backwards (undo it)")
	format := fs.String("format", patch.FormatUnified, "the edit format of PATCH: unified, search_replace (SEARCH/REPLACE blocks), apply_patch (*** Begin Patch), whole (a path, then the file in a ``` block), or auto (any of these, mixed)")
	keep := fs.Int("keep-backups", patch.DefaultKeepBackups, "keep the newest `N` backups under DIR/.runner/backups, removing older ones after an apply that makes one (0: keep them all)")
	undo := fs.String("undo", "", "put the files back from `BACKUP_DIR` (as printed after `backup:`, or a step's backup_dir), instead of applying a diff")
	fs.Usage = func() {
		fmt.Fprint(stdout, wrap("Usage: runner apply [--dir DIR] [-p N] [--check] [--reverse] [--format F] [--keep-backups N] PATCH|-", "    ", helpWidth))
		fmt.Fprintln(stdout, "       runner apply [--dir DIR] --undo BACKUP_DIR")
		fmt.Fprint(stdout, wrap("Applies a unified diff (prose and markdown fences around it are fine), all or nothing.", "", helpWidth))
		fmt.Fprint(stdout, wrap("Exit status: 0 applied or already applied, 1 refused or failed, 2 bad usage, 130 interrupted.", "  ", helpWidth))
		fmt.Fprintln(stdout, "\nExamples:\n  "+strings.Join(examples["apply"], "\n  ")+"\n\nFlags:")
		printFlags(stdout, fs)
	}
	for i, a := range args {
		if n, ok := pFlag(a); ok {
			args = append(append(append([]string{}, args[:i]...), "-p", n), args[i+1:]...)
			break
		}
	}
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if *undo != "" {
		if len(pos) != 0 {
			return usageErr(stderr, fs, "--undo takes no PATCH")
		}
		// A backup is complete before any file is replaced, so it can put
		// the tree back even after an apply was cut short (kill -9).
		if err := patch.Rollback(*dir, *undo); err != nil {
			fmt.Fprintf(stderr, "runner apply: undo: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(stdout, "restored the files of %s\n", *undo)
		return exitOK
	}
	if *keep < 0 {
		return usageErr(stderr, fs, "--keep-backups %d: want 0 (keep every backup) or more", *keep)
	}
	if err := patch.CheckFormat(*format); err != nil {
		return usageErr(stderr, fs, "--format: %v", err)
	}
	if *reverse && *format != patch.FormatUnified {
		return usageErr(stderr, fs, "--reverse applies only to unified diffs, and --format is %s", *format)
	}
	if len(pos) != 1 {
		return usageErr(stderr, fs, "want one PATCH file, or - to read the diff from standard input")
	}
	data, err := readPatch(pos[0], stdin)
	if err != nil {
		fmt.Fprintf(stderr, "runner apply: %v\n", err)
		return exitFailed
	}

	// Ctrl-C or SIGTERM: Apply stops between files and puts back what it
	// had written.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := patch.Apply(ctx, *dir, data, patch.Options{Strip: int(strip), Check: *check, Reverse: *reverse, MaxBytes: readlimit.Limit(readlimit.Diff),
		KeepBackups: keepBackups(*keep), Format: *format})
	switch {
	case err != nil && ctx.Err() != nil:
		fmt.Fprintf(stderr, "runner apply: interrupted: %v\n", err)
		return exitInterrupted
	case err != nil:
		if _, refused := patch.IsRefused(err); refused {
			fmt.Fprintf(stderr, "runner apply: the diff was not applied.\n%v\n", err)
		} else {
			fmt.Fprintf(stderr, "runner apply: %v\n", err)
		}
		return exitFailed
	}
	if !g.quiet {
		for _, m := range res.Messages {
			fmt.Fprintf(stderr, "note: %s\n", m)
		}
	}
	switch {
	case res.AlreadyApplied:
		fmt.Fprintln(stdout, "already applied: every change is in the files already; nothing changed")
		return exitOK
	case *check:
		unit := "hunks"
		if len(res.Hunks) == 1 {
			unit = "hunk"
		}
		fmt.Fprintf(stdout, "the diff applies (%d %s); nothing changed (--check)\n", len(res.Hunks), unit)
	}
	// One line per file, written in one go: a write per line was a
	// system call per file (3,241 for the 9.8 MB diff of
	// docs/benchmarks.md), more than git apply makes for reading them.
	out := bufio.NewWriterSize(stdout, 64<<10)
	for _, f := range res.Files {
		mode := ""
		if f.Mode != "" {
			mode = ", mode " + f.Mode
		}
		fmt.Fprintf(out, "%-6s %s (+%d -%d%s)\n", f.Op, f.Path, f.Added, f.Removed, mode)
	}
	if res.BackupDir != "" && !g.quiet {
		fmt.Fprintf(out, "backup: %s\n", res.BackupDir)
	}
	if err := out.Flush(); err != nil {
		// The files are changed all the same (as before, when each line's
		// error went unseen): say so, and keep the exit status of success.
		fmt.Fprintf(stderr, "runner apply: the diff was applied, but the list of files could not be written: %v\n", err)
	}
	return exitOK
}

// readPatch reads the diff from a file, or from stdin for "-", up to the
// size Apply accepts.
func readPatch(name string, stdin io.Reader) ([]byte, error) {
	if name != "-" {
		return readlimit.File(name, readlimit.Diff)
	}
	if stdin == nil {
		return nil, errors.New("no standard input")
	}
	return readlimit.All(stdin, "the diff on standard input", readlimit.Diff)
}

// keepBackups is patch.Options.KeepBackups for a count where 0 keeps
// every backup.
func keepBackups(n int) int {
	if n == 0 {
		return patch.KeepAllBackups
	}
	return n
}

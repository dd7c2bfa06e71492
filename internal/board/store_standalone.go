package board

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/board/boardlock"
)

// CreateStandalone makes a board-only file at path when none is there
// (seed 001: a board started without a plan): a saved run of no plan
// (empty plan_path and plan_source, no steps) whose status is succeeded,
// so every command treats it as a run that has ended, which `runner
// board` reads and writes under its lock. created is false when the file
// already exists (made by a concurrent writer, say): then it is used as
// it is.
//
// A path that looks like a mistake is refused rather than made into an
// empty board that would hide it: a directory that does not exist (a
// mistyped run directory), a name not ending in .json, or a sibling of
// an existing blackboard.json (a mistyped name inside a run directory).
func CreateStandalone(path string, run Run) (created bool, err error) {
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return false, fmt.Errorf("%s does not exist, and its directory %s does not either: give a saved run, or a new board's file in an existing directory", path, dir)
	}
	if !strings.HasSuffix(path, ".json") {
		return false, fmt.Errorf("%s does not exist: a new board's file name ends in .json", path)
	}
	if filepath.Base(path) != "blackboard.json" {
		if _, err := os.Stat(filepath.Join(dir, "blackboard.json")); err == nil {
			return false, fmt.Errorf("%s does not exist, and %s is a run's directory (it holds blackboard.json): a typo? A new board is not made beside a run", path, dir)
		}
	}
	// Under the lock, so that of many writers starting at once exactly
	// one creates the file and the others write to it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := boardlock.TryLock(path, boardlock.Owner{Kind: boardlock.OwnerCLI})
		var owned *boardlock.OwnedError
		if errors.As(err, &owned) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			return false, err
		}
		defer l.Unlock()
		break
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return false, err // there now (nil), or not to be looked at
	}
	now := time.Now().UTC()
	if run.StartedAt.IsZero() {
		run.StartedAt = now
	}
	if run.FinishedAt == nil {
		run.FinishedAt = &run.StartedAt
	}
	if run.ID == "" {
		run.ID = NewID(now)
	}
	if run.Status == "" {
		run.Status = StatusSucceeded
	}
	b, err := Create(path, run, Options{})
	if err != nil {
		return false, err
	}
	return true, b.Close()
}

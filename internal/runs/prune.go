package runs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
)

// PruneOptions say which saved runs Prune removes: of the runs Status
// names (none: any), those beyond the newest Keep and started longer
// than OlderThan ago; a rule left zero does not apply, and at least one
// must be given.
type PruneOptions struct {
	Keep      int           // keep this many of the newest matching runs
	OlderThan time.Duration // keep the runs started less than this ago
	Status    []string      // only runs with one of these statuses
	DryRun    bool          // say what would go, remove nothing
	Now       time.Time     // the time OlderThan counts from; zero: now
}

// Prunable are the statuses of runs Prune may remove: a run that runs,
// waits for an answer, or cannot be read is never removed.
var Prunable = []string{board.StatusSucceeded, board.StatusFailed, board.StatusInterrupted}

// Check says what is wrong with o, if anything.
func (o PruneOptions) Check() error {
	if o.Keep < 0 {
		return fmt.Errorf("keep %d: want a number of runs, 1 or more", o.Keep)
	}
	if o.OlderThan < 0 {
		return fmt.Errorf("older than %s: want a positive duration", o.OlderThan)
	}
	if o.Keep == 0 && o.OlderThan == 0 {
		return errors.New("say which runs go: keep the newest N, or remove those older than a duration (or both)")
	}
	for _, s := range o.Status {
		if !slices.Contains(Prunable, s) {
			return fmt.Errorf("status %q: runs that are %s can be pruned; a running or waiting run never is", s, prunableText())
		}
	}
	return nil
}

func prunableText() string {
	return Prunable[0] + ", " + Prunable[1] + " or " + Prunable[2]
}

// Prune removes the saved runs under dir that o says go, and lists them,
// newest first. A run is removed only while this process holds its lock
// and its files say it had stopped (succeeded, failed, interrupted): a
// live run, a run waiting for an answer, a run another process holds, is
// kept whatever the rules say. A run is first moved out of the runs
// directory, then deleted, so no one finds half of it.
func Prune(dir string, o PruneOptions) ([]Summary, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	list, _, err := Find(dir, Query{NewestFirst: true})
	if err != nil {
		return nil, err
	}
	var gone []Summary
	matched := 0
	for _, s := range list {
		if len(o.Status) > 0 && !slices.Contains(o.Status, s.Status) {
			continue
		}
		matched++
		if matched <= o.Keep || o.OlderThan > 0 && s.StartedAt.After(now.Add(-o.OlderThan)) || !prunable(s) {
			continue
		}
		if o.DryRun {
			gone = append(gone, s)
			continue
		}
		removed, err := removeRun(dir, s)
		if err != nil {
			return gone, err
		}
		if removed {
			gone = append(gone, s)
		}
	}
	return gone, nil
}

func prunable(s Summary) bool {
	return !s.Live && s.Error == "" && s.Engine == "" && slices.Contains(Prunable, s.Status)
}

// removeRun removes run s under its lock, once its files, read again
// under it, say it may go. False: it is kept (another process holds it,
// or it changed).
func removeRun(dir string, s Summary) (bool, error) {
	lock, err := boardlock.TryLock(s.Path, boardlock.Owner{Kind: boardlock.OwnerCLI})
	if err != nil {
		var owned *boardlock.OwnedError
		if errors.As(err, &owned) {
			return false, nil
		}
		return false, err
	}
	defer lock.Unlock()
	if now := summarizeAbs(s.Path, s.ID, false); !prunable(now) {
		return false, nil
	}
	runDir := filepath.Dir(s.Path)
	trash, err := os.MkdirTemp(filepath.Dir(RunsDir(dir)), "pruning-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(trash)
	if err := os.Rename(runDir, filepath.Join(trash, s.ID)); err != nil {
		return false, err
	}
	return true, nil
}

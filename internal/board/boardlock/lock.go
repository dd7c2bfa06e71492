// Package boardlock is the ownership lock of a saved run: one writer at a
// time. The process that changes a saved run holds an OS lock (flock) on
// blackboard.json.lock, beside it. A run holds it for its whole life and
// serves the board to others; a CLI write holds it for one write. The
// kernel drops the lock when its holder dies, so a killed run never leaves
// a stale lock behind.
//
// It is apart from package board because it guards the files without
// reading them: board uses it (CreateStandalone), and so do the run, the
// CLI and the servers before they open a board. It may import the
// standard library, golang.org/x/sys and internal/sys only; not board,
// which imports it.
package boardlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/planrunner/runner/internal/sys/readlimit"
	"github.com/planrunner/runner/internal/sys/safefs"
)

// fileMode is the lock file's: the owner's only, as the board's files are.
const fileMode os.FileMode = 0o600

// Owner says who holds a run's lock; the holder writes it into the lock
// file for the others to read.
type Owner struct {
	PID    int       `json:"pid"`
	Kind   string    `json:"kind"`             // OwnerRun or OwnerCLI
	Socket string    `json:"socket,omitempty"` // where a run serves its board
	Since  time.Time `json:"since"`
}

// Owner kinds.
const (
	OwnerRun = "run" // a run or resume: holds the lock until it ends
	OwnerCLI = "cli" // a one-off write: holds it for a moment
)

// OwnedError is returned when another process holds the lock.
type OwnedError struct {
	Path  string
	Owner Owner // zero when the holder has not written it yet
}

func (e *OwnedError) Error() string {
	if e.Owner.PID == 0 {
		return fmt.Sprintf("%s is in use by another process", e.Path)
	}
	return fmt.Sprintf("%s is in use by process %d (%s)", e.Path, e.Owner.PID, e.Owner.Kind)
}

// Lock is a held ownership lock.
type Lock struct {
	f    *os.File
	path string
	// since is when this process took the lock: a rewritten owner record
	// keeps it, since a run's readers take a later one for a resume.
	since time.Time
}

// LockPath is the lock file of a blackboard file.
func LockPath(path string) string { return path + ".lock" }

// TryLock takes the lock of the blackboard file at path without waiting,
// and records o as its owner. When another process holds it, the error is
// an *OwnedError naming that process.
func TryLock(path string, o Owner) (*Lock, error) {
	lp := LockPath(path)
	f, err := safefs.OpenFile(lp, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return nil, err
	}
	if err := tryFlock(f); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			owner, _ := ReadOwner(path)
			return nil, &OwnedError{Path: path, Owner: owner}
		}
		return nil, fmt.Errorf("locking %s: %w", lp, err)
	}
	l := &Lock{f: f, path: lp}
	if err := l.SetOwner(o); err != nil {
		l.Unlock()
		return nil, err
	}
	return l, nil
}

// SetOwner rewrites the owner record (a run adds its socket once it
// listens). A zero Since is when the lock was taken.
func (l *Lock) SetOwner(o Owner) error {
	if o.PID == 0 {
		o.PID = os.Getpid()
	}
	switch {
	case !o.Since.IsZero():
	case !l.since.IsZero():
		o.Since = l.since
	default:
		o.Since = time.Now().UTC()
	}
	l.since = o.Since
	data, _ := json.Marshal(o)
	data = append(data, '\n')
	if _, err := l.f.WriteAt(data, 0); err != nil {
		return err
	}
	if err := l.f.Truncate(int64(len(data))); err != nil {
		return err
	}
	// Written in place: the run's folder says that it changed (a folder
	// this process may write in can be touched).
	Touch(l.path)
	return nil
}

// Unlock releases the lock. The lock file stays: removing it would let two
// processes lock two different files.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	unFlock(l.f)
	err := l.f.Close()
	l.f = nil
	return err
}

// ReadOwner reads the owner record of path's lock file. It says who held
// the lock last; only a failed TryLock says that someone holds it now.
func ReadOwner(path string) (Owner, error) {
	var o Owner
	data, err := readlimit.Regular(LockPath(path), readlimit.Small)
	if err != nil {
		return o, err
	}
	err = json.Unmarshal(data, &o)
	return o, err
}

// Held says whether a process holds the lock of the blackboard file at
// path now. It writes nothing (a reader that polls it, or watches the
// run's directory, sees no change of its own); it holds the lock for a
// moment when it is free.
func Held(path string) bool {
	f, err := os.Open(LockPath(path))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := tryFlock(f); err != nil {
		return errors.Is(err, errWouldBlock)
	}
	unFlock(f)
	return false
}

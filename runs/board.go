package runs

import (
	"fmt"
	"io"
	"time"

	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/engine"
	"github.com/planrunner/runner/liveboard"
	"github.com/planrunner/runner/mask"
	"github.com/planrunner/runner/replay"
)

// BoardOptions say how OpenBoard opens a run's board.
type BoardOptions struct {
	// ReadOnly: the caller only reads (liveboard.Options.ReadOnly).
	ReadOnly bool
	// Mask learns the saved plan's secrets and masks them in what is
	// written to a file no one owns; nil: a mask of its own.
	Mask *mask.Masker
	// Now replaces the clock on a run no one owns (tests move it past a
	// TTL); nil: the system clock.
	Now func() time.Time
	// Stderr receives a Temporal bridge's own messages; nil: dropped.
	Stderr io.Writer
}

// OpenBoard gives access to the board of the run at path as `runner
// board` has it, for any caller (the CLI, the MCP server): through the
// socket of the process running it, through a bridge to a run on Temporal
// still running, or on the saved file under the run's lock. On a file no
// one owns, the saved plan's key patterns apply, its secrets are masked in
// what is written, and each write is recorded for replay (as the live
// board's owner records those it takes), so a replay still matches. The
// path returned is the file worked on (for an ended run on Temporal, the
// blackboard.json it was saved to).
func OpenBoard(path string, o BoardOptions) (liveboard.Access, string, error) {
	if o.Mask == nil {
		o.Mask = mask.New()
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	remote, path, err := OpenRemote(path, o.Mask.Writer(o.Stderr))
	if err != nil {
		return nil, path, err
	}
	if remote != nil {
		return remote, path, nil
	}
	a, err := liveboard.Open(path, o.liveOptions())
	if err != nil {
		return nil, path, err
	}
	if _, live := a.(*liveboard.Client); !live && !o.ReadOnly {
		a = afterRun{a}
	}
	return a, path, nil
}

// liveOptions are the liveboard options OpenBoard opens a file with.
func (o BoardOptions) liveOptions() liveboard.Options {
	m := o.Mask
	return liveboard.Options{Redact: m.String, Now: o.Now, ReadOnly: o.ReadOnly, Perms: func(run board.Run) map[string]board.Perms {
		p := SavedPlan(run)
		if p == nil {
			return nil
		}
		LearnSecrets(m, p)
		return engine.PlanPerms(p)
	}}
}

// LiveOptions are the liveboard options OpenBoard would open path's file
// with, for a caller that opens it itself (a watch, which reopens it as
// the run's owner comes and goes).
func LiveOptions(o BoardOptions) liveboard.Options { return o.liveOptions() }

// afterRun records each write made on the saved file of a run no process
// owns (it has ended, or stopped before a resume), as the live board's
// owner records the writes it takes, so that `runner replay` makes it
// again where it came and still matches the recording.
type afterRun struct{ liveboard.Access }

func (a afterRun) Write(q liveboard.WriteRequest) (board.Entry, error) {
	e, err := a.Access.Write(q)
	if err != nil {
		return e, err
	}
	b, err := a.Board()
	if err == nil {
		err = replay.RecordAfterRun(b, e)
	}
	if err != nil {
		return e, fmt.Errorf("%s was written (version %d), but recording the write for replay failed: %w", e.Key, e.Version, err)
	}
	return e, nil
}

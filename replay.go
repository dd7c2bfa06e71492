package runner

import (
	"context"
	"errors"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/runs"
	"github.com/rs/zerolog"
)

// ReplayOptions say how to replay a saved run: the flags of `runner
// replay`. The zero value replays the recorded plan offline.
type ReplayOptions struct {
	// Plan is a plan file (a changed plan) to replay against the
	// recording instead of the recorded plan.
	Plan string
	// Workdir runs command, test and apply_diff steps for real in this
	// directory (a checkout); "": offline, their results taken from the
	// recording too, nothing run and no file touched.
	Workdir string
	// Out is where the replay's own blackboard.json is written; "":
	// replay-<id>.json beside the recording.
	Out string
	// Logger receives the replay's events; the zero Logger logs nothing.
	Logger zerolog.Logger
	// Types are the step types the plan may use; nil: the built-in ones.
	Types *Registry
}

// Replay replays the saved run at recording (a path as [Open] takes it)
// as `runner replay` does: every model answer and clock reading comes
// from the recording, and each step is checked against what it did then.
// It returns the replay's own blackboard, and:
//   - a *[Divergence] when the replay went another way than the
//     recording (a changed plan, a changed world);
//   - else, as [Run], nil when the replayed run succeeded (or matched up
//     to where a recording that never ended stops) and how it ended
//     otherwise;
//   - or a nil Blackboard and why, when the replay could not start (the
//     file does not read, the plan has [Problems]).
func Replay(ctx context.Context, recording string, o ReplayOptions) (*Blackboard, error) {
	recording, err := runs.Resolve(recording, ".")
	if err != nil {
		return nil, err
	}
	rep, err := runs.Replay(ctx, recording, runs.ReplayOptions{
		Options:     replay.Options{Out: o.Out, Log: o.Logger, Version: version(), Registry: o.Types},
		PlanFile:    o.Plan,
		WorkdirPath: o.Workdir,
	})
	if err != nil {
		return nil, startError(err)
	}
	if err := rep.Board.Close(); err != nil {
		return nil, err
	}
	runErr := rep.RunErr
	if errors.Is(runErr, engine.ErrEnded) {
		runErr = nil
	}
	bb := &Blackboard{b: rep.Board, err: runErr}
	if d := rep.Divergence; d != nil {
		return bb, &Divergence{Label: d.Label, Visit: d.Visit, Message: d.Message, line: d.Error(), report: d.String()}
	}
	return bb, runErr
}

// Divergence is where a replay first went another way than its
// recording.
type Divergence struct {
	Label   string // the step; "" for the run as a whole
	Visit   int    // its visit
	Message string // what differed

	line, report string // as the engine words them
}

// Error is the divergence in one line.
func (d *Divergence) Error() string { return d.line }

// String is the divergence as `runner replay` shows it: where, the steps
// that led there, what was recorded and what happened now, and a diff.
func (d *Divergence) String() string { return d.report }

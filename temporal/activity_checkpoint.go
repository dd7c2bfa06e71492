package temporal

import (
	"context"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"go.temporal.io/sdk/activity"
)

// A step that makes several model calls (an llm step using tools, a
// coordinate step's turns) checkpoints them in its heartbeats: each beat
// carries the recordings of the calls its attempt has made so far (a
// large one travels as a blob name, through the payload codec). When the
// worker dies, Temporal gives the last beat's details to the retry, which
// answers those calls from them instead of paying the model again.

// checkpoint is a step attempt's heartbeat details.
type checkpoint struct {
	Recordings []board.Recording
}

// checkpointOf is what the step has recorded since the board held nrec
// recordings: its own model calls.
func checkpointOf(b *board.Board, nrec int, label string, visit int) []any {
	// Never empty: a heartbeat with details is how the workflow knows an
	// attempt lost with its host had run (onHost counts it).
	var cp checkpoint
	recs := b.Recordings()
	if len(recs) <= nrec {
		return []any{cp}
	}
	for _, r := range recs[nrec:] {
		if r.Label == label && r.Visit == visit && r.Kind == agents.KindLLM {
			cp.Recordings = append(cp.Recordings, r)
		}
	}
	return []any{cp}
}

// resumeCheckpoint gives the step's agents the calls a lost attempt of
// this step checkpointed.
func resumeCheckpoint(ctx context.Context, r *engine.Runner, label string, visit int) {
	if r.Agents == nil || !activity.HasHeartbeatDetails(ctx) {
		return
	}
	var cp checkpoint
	if err := activity.GetHeartbeatDetails(ctx, &cp); err != nil {
		activity.GetLogger(ctx).Warn("the lost attempt's checkpoint cannot be read: its model calls are made again", "error", err)
		return
	}
	var mine []board.Recording
	for _, rec := range cp.Recordings {
		if rec.Label == label && rec.Visit == visit {
			mine = append(mine, rec)
		}
	}
	if len(mine) > 0 {
		r.Agents.Resume(mine)
	}
}

// carried is what an attempt's beats carry before its step runs: the
// previous attempt's checkpoint, if it left one, so that a beat sent
// while the workspace and board are read does not erase it (and a lost
// attempt that had run is still counted); else nothing, so that an
// attempt lost before its step started is not counted as a run.
func carried(ctx context.Context) func() []any {
	if !activity.HasHeartbeatDetails(ctx) {
		return func() []any { return nil }
	}
	var cp checkpoint
	if err := activity.GetHeartbeatDetails(ctx, &cp); err != nil {
		return func() []any { return nil }
	}
	return func() []any { return []any{cp} }
}

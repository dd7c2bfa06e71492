package steps

import (
	"context"
	"errors"
	"fmt"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/engine"
)

// decodeBatch reads batch, batch_failed and batch_poll.
func decodeBatch(d *engine.Decoder, s *llmStep) {
	// The agent's batch: true is the default of a step with for_each.
	def := false
	if a := d.Plan.Agent(s.agent); a != nil && a.Batch && d.Step != nil && d.Step.ForEach != nil {
		def = true
	}
	if s.batch = d.Bool("batch", false); !d.Has("batch") {
		s.batch = def
	}
	s.batchFailed = d.Enum("batch_failed", "retry")
	for _, k := range []string{"batch_failed", "batch_poll"} {
		if n := d.Node(k); n != nil && !s.batch {
			d.Errorf(n, "%s is for batch: true", k)
		}
	}
	if n := d.Node("batch_poll"); n != nil {
		if s.batchPoll = d.Duration("batch_poll"); s.batchPoll <= 0 {
			d.Errorf(n, "batch_poll must be more than 0")
		}
	}
}

// Gathers: a batch: true step's for_each gathers its items' first calls
// into one batch.
func (s *llmStep) Gathers() bool { return s.batch }

// joinBatch makes the session's first call join item index's gathering:
// the batch of every item's first call, sent by the gathering's flush.
func (s *llmStep) joinBatch(sc *engine.StepContext, set *agents.Set, ss *agents.Session, g *engine.Gather, index int) {
	if !set.Batchable(ss.Agent().Name, sc.Label, sc.Visit) {
		g.Leave(index) // a replay's recording answers it, or a script agent
		return
	}
	label, visit, log := engine.BaseLabel(sc.Label), sc.Visit, sc.Log
	flush := func(ctx context.Context, joined map[int]any) (map[int]any, error) {
		calls := make(map[int]*agents.BatchCall, len(joined))
		for i, v := range joined {
			calls[i] = v.(*agents.BatchCall)
		}
		got, err := set.RunBatch(ctx, sc.Board, agents.BatchOptions{Key: g.Key, Label: label, Visit: visit, Poll: s.batchPoll, Log: log}, calls)
		if err != nil {
			return nil, err
		}
		out := make(map[int]any, len(got))
		for i, o := range got {
			out[i] = o
		}
		return out, nil
	}
	ss.BatchLeave = func() { g.Leave(index) }
	ss.Batch = func(ctx context.Context, c *agents.BatchCall) (*agents.Response, error) {
		v, err := g.Join(ctx, index, c, flush)
		if errors.Is(err, engine.ErrNotGathered) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		o, _ := v.(agents.BatchOutcome)
		if o.Resp != nil {
			return o.Resp, nil
		}
		if s.batchFailed == "fail" {
			return nil, fmt.Errorf("the batch did not answer this item: %s", o.Reason)
		}
		ss.Log.Info().Str("reason", o.Reason).Msg("the batch did not answer this item; asking it as an ordinary call")
		return nil, nil
	}
}

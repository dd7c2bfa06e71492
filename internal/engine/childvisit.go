package engine

import (
	"fmt"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// Visits a step runs inside its own: the sub-agents an llm step's agent
// starts at run time (spawn_agent). Each is a step record of its own
// (board.StepRecord.Agent set, Parent the visit that started it), so the
// display, the report, serve and traces show it under its caller; it is
// counted by limits.max_steps like any visit, its times come from the
// recording in a replay, and the replay's check compares its outcome.
// It is no step of the plan: resume and replay pass its record by, and
// the step that started it runs it again.

// Child is a visit running inside a step's visit.
type Child struct {
	sc  *StepContext
	rec board.StepRecord
	// timed: the recording gave the visit's times (a replay).
	timed bool
}

// StartChild starts the visit of sub-agent agent under label, inside
// parent (the step's label or another child's), with the step's visit
// number (its recordings are under that visit). It refuses past
// limits.max_steps, and the refusal is not the run's end: the caller
// says so to its agent.
func (sc *StepContext) StartChild(label, parent, typ, agent string) (*Child, error) {
	c := &Child{sc: sc, rec: board.StepRecord{Label: label, Visit: sc.Visit, Type: typ, Parent: parent, Agent: agent}}
	r := sc.runner
	if r == nil {
		c.rec.StartedAt = time.Now().UTC()
		return c, nil
	}
	if max := r.Prog.Plan.Limits.MaxSteps; r.total.Add(1) > int64(max) {
		r.total.Add(-1)
		return nil, fmt.Errorf("limits.max_steps %d reached: no visit is left for %s", max, label)
	}
	c.rec.StartedAt = r.clockNow()
	if r.Script != nil {
		if s, f, ok := r.Script.Times(label, sc.Visit); ok {
			c.rec.StartedAt, c.rec.FinishedAt, c.timed = s, f, true
		}
	}
	if r.Observer != nil {
		r.Observer.StepStarted(label, sc.Visit, parent)
	}
	return c, nil
}

// Label is the child's label.
func (c *Child) Label() string { return c.rec.Label }

// Finish ends the child's visit: its result, saved as a step's is, and
// err (failed, or canceled when the step was stopped), at the time it
// ended. Save records it.
func (c *Child) Finish(res Result, err error, stopped bool) error {
	rec := c.rec
	rec.Status = StatusSucceeded
	if err != nil {
		rec.Status, rec.Error = StatusFailed, err.Error()
		if stopped {
			rec.Status = StatusCanceled
		}
	}
	raw, jerr := encodeResult(res)
	if jerr != nil {
		return jerr
	}
	rec.Result = raw
	if !c.timed {
		rec.FinishedAt = time.Now().UTC()
		if r := c.sc.runner; r != nil {
			rec.FinishedAt = r.clockNow()
		}
	}
	rec.DurationMS = rec.FinishedAt.Sub(rec.StartedAt).Milliseconds()
	c.rec = rec
	return nil
}

// Save records the finished visit on the board and tells the Observer.
// Children running at once are saved by their caller in an order of its
// choosing (the order it started them), so the board's records are in
// the same order in a replay.
func (c *Child) Save() error {
	if err := c.sc.Board.AddStep(c.rec); err != nil {
		return err
	}
	if r := c.sc.runner; r != nil && r.Observer != nil {
		r.Observer.StepFinished(c.rec)
	}
	return nil
}

// clockNow is the time a visit reads: the run's Clock, or the system's.
func (r *Runner) clockNow() time.Time {
	if r.Clock != nil {
		return r.Clock().UTC()
	}
	return time.Now().UTC()
}

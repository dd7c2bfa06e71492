package engine

import (
	"encoding/json"
	"fmt"

	"github.com/planrunner/runner/internal/board"
)

// ErrFinished is returned by Restore when the saved run has nothing left
// to do.
var ErrFinished = fmt.Errorf("the run has no step left to run")

// Restore prepares the runner to continue a saved run (runner resume). It
// rebuilds each step's visits and state, and the run's step count, from
// the saved step records, and goes on after the last completed top-level
// step. A step is completed when it succeeded, was skipped by its `if`, or
// failed under continue_on_error; an interrupted or failed step runs again
// under the same visit number. Children that completed inside a group that
// did not finish are not run again when the group is. The records are
// the runner's board's.
func (r *Runner) Restore() (err error) {
	r.init()
	index := make(map[string]int, len(r.Prog.Steps)) // sized once: 100k steps grew it 17 times
	for i, n := range r.Prog.Steps {
		index[n.Label] = i
	}
	pending := map[string]map[string]board.StepRecord{}
	var lastRec board.StepRecord // the last completed top-level step's
	var last *board.StepRecord
	steps := 0
	for rec := range r.Board.StepsBrief() {
		steps++
		if rec.Spawned() {
			r.total.Add(1) // a sub-agent's visit counted for limits.max_steps; its step runs it again
			continue
		}
		n := r.Prog.Node(rec.Label)
		if n == nil {
			return fmt.Errorf("saved step %q is not in the plan", rec.Label)
		}
		if !completed(n, &rec) {
			continue
		}
		if rec.Visit > r.visits.get(rec.Label) {
			r.visits.set(rec.Label, rec.Visit)
		}
		r.total.Add(1)
		if n.item == nil && n.Each == nil && n.Sub == nil {
			// Its view is built when an expression first names it
			// (evaluator.need): most are never named again.
			r.evalOf(n).deferView(n.localLabel(), n, r.Board, steps-1)
		} else {
			res, err := decodeResult(n, rec.Result)
			if err != nil {
				return err
			}
			r.setView(n, rec, res)
		}
		if n.Children != nil || n.Seq != nil || n.Each != nil || n.Sub != nil {
			delete(pending, n.Label) // the group finished: its children are history
		}
		if rec.Parent != "" {
			if pending[rec.Parent] == nil {
				pending[rec.Parent] = map[string]board.StepRecord{}
			}
			pending[rec.Parent][rec.Label] = rec
		} else {
			lastRec, last = rec, &lastRec
		}
	}
	r.done = pending
	// Clock readings go on from the last one a visit made, as model calls
	// do, so a replay finds each reading under one number.
	resumes := 0
	for _, rec := range r.Board.Recordings() {
		switch rec.Kind {
		case KindClock:
			k := visitKey{rec.Label, rec.Visit}
			r.clockN[k] = max(r.clockN[k], rec.Call)
		case KindRead:
			k := visitKey{rec.Label, rec.Visit}
			r.readN[k] = max(r.readN[k], rec.Call)
		case KindWorkspace:
			k := visitKey{rec.Label, rec.Visit}
			r.wsN[k] = max(r.wsN[k], rec.Call)
		case KindResume:
			resumes++
		}
	}
	defer func() {
		if err == nil {
			err = r.markResume(steps, resumes+1)
		}
	}()
	switch {
	case last == nil:
		r.startPC = 0
	case last.Goto == "end":
		return ErrFinished
	case last.Goto == "fail":
		_, r.endErr = r.Prog.Next(index[last.Label], "fail")
		return ErrFinished
	case last.Goto != "":
		r.startPC = index[last.Goto]
	default:
		r.startPC = index[last.Label] + 1
	}
	if r.startPC >= len(r.Prog.Steps) {
		return ErrFinished
	}
	return nil
}

// End ends a restored run that Restore found with no step left
// (ErrFinished) the way its last step would have: a run killed after its
// last step was saved and before its end was keeps its status "running"
// in the file until it is ended. It marks the final status, saves the
// board and returns the run's error, as Run does.
func (r *Runner) End() error {
	return r.finishRun(r.endErr)
}

func completed(n *Node, rec *board.StepRecord) bool {
	switch rec.Status {
	case StatusSucceeded:
		return true
	case StatusSkipped:
		return rec.Error == "" // not a child that fail_fast kept from starting
	case StatusFailed:
		return n.ContinueOnError
	}
	return false
}

// alreadyDone returns the record of a child that completed in this visit
// of its group before the run was interrupted; it is used once.
func (r *Runner) alreadyDone(group, child string) (board.StepRecord, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.done[group][child]
	if ok {
		delete(r.done[group], child)
	}
	return rec, ok
}

// markResume records where the run was taken over, so that a replay ends
// the first part there and goes on as the resumed run did.
func (r *Runner) markResume(steps, n int) error {
	run := r.Board.Run()
	mark, err := json.Marshal(ResumeMark{Steps: steps, Entries: r.Board.Len(),
		Recordings: len(r.Board.Recordings()), Status: run.Status, Error: run.Error})
	if err != nil {
		return err
	}
	return r.Board.AddRecording(board.Recording{Kind: KindResume, Call: n, Response: mark})
}

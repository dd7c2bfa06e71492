package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/planrunner/runner/internal/board"
)

// What another scheduler (the Temporal workflow, module temporal) needs
// beside Drive and Driver: its workers run single attempts of steps on a
// copy of the run's state, and a run that continues in a new process
// (continue-as-new) carries its visit counts over.

// Prepare readies the runner's expression state; Run and Drive do it
// themselves.
func (r *Runner) Prepare() { r.init() }

// RunAttempt runs one attempt of a leaf step visit with its timeout, as
// Run does: the work of a Temporal activity.
func (r *Runner) RunAttempt(ctx context.Context, n *Node, visit, attempt int) (Result, error) {
	r.init()
	vc := r.clockFor(n.Label, visit, n.item != nil)
	vc.item = n.item
	return r.once(ctx, n, visit, attempt, vc)
}

// Apply makes a step record from elsewhere (another process that ran the
// step) visible to expressions, without touching the board.
func (r *Runner) Apply(rec board.StepRecord) error {
	if rec.Spawned() {
		return nil // no step of the plan: expressions never name it
	}
	n := r.Prog.Node(rec.Label)
	if n == nil {
		return errors.New("step " + rec.Label + " is not in the plan")
	}
	res, err := decodeResult(n, rec.Result)
	if err != nil {
		return err
	}
	r.setView(n, rec, res)
	return nil
}

// Counts are the visits of each step so far and the step executions
// (limits.max_steps): what a run continued elsewhere carries over.
func (r *Runner) Counts() (visits map[string]int, total int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.visits.all(), r.total.Load()
}

// SetCounts starts the runner from counts a previous part of the run
// carried (see Counts).
func (r *Runner) SetCounts(visits map[string]int, total int64) {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	for label, n := range visits {
		r.visits.set(label, n)
	}
	r.total.Store(total)
}

// EncodeResult is a result as blackboard.json saves it: the type's fields
// and `output`.
func EncodeResult(res Result) (json.RawMessage, error) { return encodeResult(res) }

// DecodeResult reads a saved result back into the step type's struct.
func DecodeResult(n *Node, raw json.RawMessage) (Result, error) { return decodeResult(n, raw) }

// Inputs are the step's templated fields as the attempt rendered them
// (the record's `inputs`): a driver whose attempt ran elsewhere carries
// them back with the result, which does not hold them.
func (res Result) Inputs() map[string]string { return res.inputs }

// SetInputs gives a result decoded from elsewhere its attempt's rendered
// inputs (see Inputs), so the record keeps them as a run in one process does.
func (res *Result) SetInputs(in map[string]string) { res.inputs = in }

// visitLimit is the error a visit past the step's max_visits ends the run
// with; nil within it.
func visitLimit(n *Node, visit int) error {
	if visit > n.MaxVisits {
		return &RunError{Status: StatusFailed, Label: n.Label, Fatal: true, Err: fmt.Errorf(
			"visited %d times, past its max_visits of %d (a loop that does not end?)", visit, n.MaxVisits)}
	}
	return nil
}

// stepsLimit is the error the total-th step execution ends the run with
// when it passes limits.max_steps; nil within it. The message leaves out
// the count: in a parallel group it depends on how the children raced,
// and a replay must say the same.
func stepsLimit(p *Program, n *Node, total int64) error {
	if max := p.Plan.Limits.MaxSteps; total > int64(max) {
		return &RunError{Status: StatusFailed, Label: n.Label, Fatal: true, Err: fmt.Errorf(
			"limits.max_steps %d reached", max)}
	}
	return nil
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/planrunner/runner/board"
)

// The methods in this file let another scheduler drive a plan with the
// runner's own pieces: the Temporal workflow (module temporal) walks the
// steps itself, with durable timers and activities, but evaluates `if` and
// `until`, runs pure steps, and records finished steps exactly as Run does,
// so its blackboard.json is the one an in-process run writes.

// Prepare readies the runner's expression state; Run does it itself.
func (r *Runner) Prepare() { r.init() }

// Visit is one step visit's view of the clock for its expressions (see
// Runner.Now); every call below about that visit takes it.
type Visit struct{ vc *visitClock }

// BeginVisit starts a step visit's clock.
func (r *Runner) BeginVisit(label string, visit int) Visit {
	return Visit{r.clockFor(label, visit, false)}
}

// EvalIf reports whether a step's `if` lets it run (true without one).
func (r *Runner) EvalIf(n *Node, v Visit) (bool, error) {
	if n.If == nil {
		return true, nil
	}
	return r.eval.bool(n.If, nil, v.vc)
}

// CheckUntil applies a step's `retry.until` to a successful attempt. It
// returns nil when the step is done; else the attempt's error, and whether
// that error ends the visit at once (the expression itself failed) rather
// than being retried like any failed attempt.
func (r *Runner) CheckUntil(n *Node, v Visit, visit, attempt int, res Result) (err error, final bool) {
	if n.Until == nil {
		return nil, false
	}
	step := stateView(StatusSucceeded, res.Output, "", visit, 0, orZero(res.Fields, n))
	ok, uerr := r.eval.bool(n.Until, map[string]any{"step": step}, v.vc)
	switch {
	case uerr != nil:
		return fmt.Errorf("retry.until: %w", uerr), true
	case !ok:
		return fmt.Errorf("retry.until (%s) still false after %d attempts", n.Retry.Until.Src, attempt), false
	}
	return nil, false
}

// Record makes a finished visit visible to expressions and durable on the
// board, with its audit entry and key writes (see Board.FinishStep).
func (r *Runner) Record(n *Node, rec *board.StepRecord, res Result, v Visit) error {
	return r.record(n, rec, res, v.vc)
}

// RunOnce runs one attempt of a leaf step with its timeout, as Run does.
func (r *Runner) RunOnce(ctx context.Context, n *Node, v Visit, visit, attempt int) (Result, error) {
	return r.once(ctx, n, visit, attempt, v.vc)
}

// Backoff is the delay before retry number attempt, jitter drawn from
// r.Jitter.
func (r *Runner) Backoff(n *Node, attempt int) time.Duration { return r.backoff(n, attempt) }

// GroupOutput is a parallel group's output: each child's output by label.
func (r *Runner) GroupOutput(n *Node) map[string]any {
	out := map[string]any{}
	for _, c := range n.Children {
		out[c.Label] = r.eval.get(c.Label)["output"]
	}
	return out
}

// Apply makes a step record from elsewhere (another process that ran the
// step) visible to expressions, without touching the board.
func (r *Runner) Apply(rec board.StepRecord) error {
	n := r.Prog.Node(rec.Label)
	if n == nil {
		return errors.New("step " + rec.Label + " is not in the plan")
	}
	res, err := decodeResult(n, rec.Result)
	if err != nil {
		return err
	}
	r.eval.set(rec.Label, stateView(rec.Status, res.Output, rec.Error, rec.Visit, rec.DurationMS, orZero(res.Fields, n)))
	return nil
}

// EncodeResult is a result as blackboard.json saves it: the type's fields
// and `output`.
func EncodeResult(res Result) (json.RawMessage, error) { return encodeResult(res) }

// DecodeResult reads a saved result back into the step type's struct.
func DecodeResult(n *Node, raw json.RawMessage) (Result, error) { return decodeResult(n, raw) }

// SiblingFailed is the error a child of a fail_fast group gets when a
// sibling failed first; a group does not count it as its own failure.
var SiblingFailed = errSiblingFailed

// NotStartedError is the error saved for a child that fail_fast kept from
// starting.
var NotStartedError = "not started: " + errSiblingFailed.Error()

// VisitLimit is the error a visit past the step's max_visits ends the run
// with; nil within it.
func VisitLimit(n *Node, visit int) error {
	if visit > n.MaxVisits {
		return &RunError{Status: StatusFailed, Label: n.Label, Fatal: true, Err: fmt.Errorf(
			"visited %d times, past its max_visits of %d (a loop that does not end?)", visit, n.MaxVisits)}
	}
	return nil
}

// StepsLimit is the error the total-th step execution ends the run with
// when it passes limits.max_steps; nil within it. The message leaves out
// the count: in a parallel group it depends on how the children raced,
// and a replay must say the same.
func StepsLimit(p *Program, n *Node, total int64) error {
	if max := p.Plan.Limits.MaxSteps; total > int64(max) {
		return &RunError{Status: StatusFailed, Label: n.Label, Fatal: true, Err: fmt.Errorf(
			"limits.max_steps %d reached", max)}
	}
	return nil
}

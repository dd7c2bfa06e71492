package engine

import (
	"errors"

	"github.com/planrunner/runner/internal/board"
)

// ErrWaiting is what a step returns when it needs a person's answer that
// is not there yet (the input step). The visit is not recorded; the run
// saves and ends with status waiting, and `runner resume` runs the visit
// again under the same number once it is answered.
var ErrWaiting = errors.New("waiting for an answer")

// StatusWaiting is the status of a run stopped at an input step.
const StatusWaiting = board.StatusWaiting

// waitingErr is how a waiting visit ends the run: fatal, so that
// continue_on_error does not walk past an unanswered question.
func waitingErr(label string, err error) error {
	var re *RunError
	if errors.As(err, &re) && re.Status == StatusWaiting {
		return re // a group passes its child's on
	}
	return &RunError{Status: StatusWaiting, Label: label, Err: ErrWaiting, Fatal: true}
}

func isWaiting(err error) bool { return errors.Is(err, ErrWaiting) }

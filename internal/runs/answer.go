package runs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/mask"
)

// A Question is an input step of a run, opened to be answered: on the
// run's saved file (held locked until Close), in the process still
// running the run's other steps, or on Temporal. It is answered once
// (Answer): checked against the step's form, recorded on the board so
// that a replay takes it from there, and idempotent: the same answer again
// succeeds, a different one is refused (board.ErrAnswerConflict).
type Question struct {
	// Path is the run's blackboard.json (for a run on Temporal that has
	// ended, the file it was saved to).
	Path  string
	Run   board.Run
	Label string
	Visit int // 0: the step's visit that waits
	// Waiting says the step waits now, with Input its question and Form
	// the answer's fields; a step that has not asked yet can still be
	// answered in advance, unchecked until it asks.
	Waiting bool
	Input   board.WaitingInput
	Form    *steps.Form
	// Identity is who answers as the caller knows it for sure (the
	// operating-system user, serve's trusted header or per-person token;
	// "": not known). An input that names answerers takes an answer only
	// from one of them, recorded under that name.
	Identity string

	saved  *board.Board
	lock   *boardlock.Lock
	live   answerTaker
	remote bool
	mask   *mask.Masker
}

// answerTaker is a run that takes answers while it runs: on Temporal, or
// in another process still running an input's siblings.
type answerTaker interface {
	Board() (*board.Board, error)
	Answer(board.Answer) (liveboard.AnswerReply, error)
	Close() error
}

// Where says how an answer was taken.
type Where int

const (
	// OnFile: recorded on the saved run; resume it to go on.
	OnFile Where = iota
	// OnLiveRun: taken by the process still running the run, for its
	// next resume.
	OnLiveRun
	// OnTemporal: taken by the run on Temporal, which goes on at once.
	OnTemporal
)

// Answered is an answer recorded.
type Answered struct {
	Label   string
	Visit   int
	Already bool // the same answer was there already
	Where   Where
}

// OpenQuestion opens input step label (visit 0: the one that waits) of
// the run at path. m learns the saved plan's secrets, which are masked in
// what is written (nil: a mask of its own); a bridge to Temporal writes
// its messages to stderr. A step that neither waits nor can be answered
// in advance is a UsageError wrapping board.ErrNotWaiting.
func OpenQuestion(path, label string, visit int, m *mask.Masker, stderr io.Writer) (*Question, error) {
	if m == nil {
		m = mask.New()
	}
	// A run on its way out has stopped serving its board but still holds
	// its file while it saves it; another process may hold the file for
	// one write. Either lets go within moments: the answer waits for
	// that, bounded, rather than being refused.
	deadline := time.Now().Add(releaseWait)
	for {
		q, err := openQuestion(path, label, visit, m, stderr)
		var busy *busyError
		if !errors.As(err, &busy) {
			return q, err
		}
		if time.Now().After(deadline) {
			return nil, usage(fmt.Errorf("%v (try again once it has stopped)", busy.err))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// releaseWait bounds how long an answer waits for a run's file held by a
// process it cannot answer through.
const releaseWait = 10 * time.Second

// busyError: the run's file is held by a process that does not take the
// answer now (no socket, or one that no longer answers).
type busyError struct{ err error }

func (e *busyError) Error() string { return e.err.Error() }

func openQuestion(path, label string, visit int, m *mask.Masker, stderr io.Writer) (*Question, error) {
	q := &Question{Label: label, Visit: visit, mask: m}
	remote, path, err := OpenRemote(path, stderr)
	if err != nil {
		return nil, usage(err)
	}
	q.Path = path
	if remote != nil {
		q.live, q.remote = remote, true
	} else {
		if _, err := os.Stat(path); err != nil {
			return nil, usage(err)
		}
		if q.lock, err = boardlock.TryLock(path, boardlock.Owner{Kind: boardlock.OwnerCLI}); err != nil {
			// A run still running (its other steps) takes the answer
			// through its socket, for its next resume.
			var owned *boardlock.OwnedError
			if !errors.As(err, &owned) {
				return nil, usage(fmt.Errorf("%v (try again once it has stopped)", err))
			}
			if owned.Owner.Socket == "" {
				return nil, &busyError{err}
			}
			c, derr := liveboard.Dial(owned.Owner.Socket, path)
			if derr != nil {
				return nil, &busyError{err}
			}
			q.live = c
		} else if q.saved, err = board.Load(path); err != nil {
			q.Close()
			return nil, usage(err)
		}
	}
	if q.live != nil {
		if q.saved, err = q.live.Board(); err != nil {
			q.Close()
			if !q.remote && unreached(err) {
				return nil, &busyError{err} // the run stopped serving since it answered the dial
			}
			return nil, err
		}
	}
	q.Run = q.saved.Run()
	if p := SavedPlan(q.Run); p != nil {
		LearnSecrets(m, p)
	}
	if q.Input, q.Waiting = steps.WaitingInput(q.Run, label, visit); q.Waiting {
		if q.Form, err = steps.ParseForm(q.Input.Form); err != nil {
			q.Close()
			return nil, fmt.Errorf("step %s: the saved form: %v", label, err)
		}
		return q, nil
	}
	// Say so before an answer is asked for.
	if _, _, err := steps.Settle(q.Run, q.saved.Recordings(), board.Answer{Label: label, Visit: visit}); errors.Is(err, board.ErrNotWaiting) {
		q.Close()
		return nil, usage(err)
	}
	return q, nil
}

// Answer records answer (the form's fields by name), given by by. A
// different answer already recorded is board.ErrAnswerConflict; an answer
// the form refuses is a UsageError.
func (q *Question) Answer(answer map[string]any, by string) (Answered, error) {
	return q.answer(answer, by, true)
}

// answer is Answer; retry: once more, on the question opened afresh, when
// the run that was to take the answer stopped serving meanwhile.
func (q *Question) answer(answer map[string]any, by string, retry bool) (Answered, error) {
	if q.Waiting {
		if err := steps.MayAnswer(q.Input, q.Identity); err != nil {
			return Answered{}, err
		}
		if len(q.Input.Answerers) > 0 {
			by = q.Identity
		}
	}
	a, already, err := steps.Settle(q.Run, q.saved.Recordings(), board.Answer{Label: q.Label, Visit: q.Visit, Answer: answer, By: by})
	if err != nil {
		if errors.Is(err, board.ErrAnswerConflict) {
			return Answered{}, err
		}
		return Answered{}, usage(err)
	}
	if q.live != nil {
		rep, err := q.live.Answer(a)
		if err != nil && retry && !q.remote && unreached(err) {
			// The run stopped serving since the question was opened, and
			// the answer never reached it: it goes to the saved file once
			// the run lets go of it.
			return q.answerAgain(answer, by)
		}
		switch {
		case errors.Is(err, board.ErrAnswerConflict):
			return Answered{}, err
		case err != nil:
			return Answered{}, usage(err)
		}
		where := OnLiveRun
		if q.remote {
			where = OnTemporal
		}
		return Answered{Label: rep.Label, Visit: rep.Visit, Already: rep.Already, Where: where}, nil
	}
	if !already {
		b, err := board.OpenAppend(q.Path, board.Options{Redact: q.mask.String})
		if err != nil {
			return Answered{}, err
		}
		err = b.AddRecording(steps.AnswerRecording(a))
		if cerr := b.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return Answered{}, err
		}
	}
	return Answered{Label: a.Label, Visit: a.Visit, Already: already, Where: OnFile}, nil
}

// HasAnswer reports whether the visit that waits has an answer recorded
// already (it waits until the run is resumed).
func (q *Question) HasAnswer() bool {
	_, ok := steps.FindAnswer(q.saved.Recordings(), q.Input.Label, q.Input.Visit)
	return ok
}

// answerAgain gives answer to the question opened afresh, once.
func (q *Question) answerAgain(answer map[string]any, by string) (Answered, error) {
	q.Close()
	again, err := OpenQuestion(q.Path, q.Label, q.Visit, q.mask, nil)
	if err != nil {
		return Answered{}, err
	}
	defer again.Close()
	again.Identity = q.Identity
	return again.answer(answer, by, false)
}

// Close lets go of the run.
func (q *Question) Close() {
	if q.live != nil {
		q.live.Close()
		q.live = nil
	}
	if q.lock != nil {
		q.lock.Unlock()
		q.lock = nil
	}
}

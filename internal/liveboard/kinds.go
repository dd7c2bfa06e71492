package liveboard

import (
	"errors"
	"net/http"

	"github.com/planrunner/runner/internal/board"
)

// The ways a board refuses a write or an answer, by the name they travel
// under (the protocol's error "kind", a Temporal error's type) and the
// HTTP status the protocol answers with, so a refusal made in another
// process is the same error here (errors.Is on board's sentinels).
var kinds = []struct {
	kind string
	err  error
	code int
}{
	{"version", board.ErrVersion, http.StatusConflict},
	{"held", board.ErrHeld, http.StatusConflict},
	{"denied", board.ErrDenied, http.StatusForbidden},
	{"absent", board.ErrAbsent, http.StatusNotFound},
	{"answer-conflict", board.ErrAnswerConflict, http.StatusConflict},
	{"not-waiting", board.ErrNotWaiting, http.StatusNotFound},
	{"bad-answer", board.ErrBadAnswer, http.StatusBadRequest},
}

// KindOf names the refusal err is ("bad" for any other error), with its
// HTTP status.
func KindOf(err error) (string, int) {
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.kind, k.code
		}
	}
	return "bad", http.StatusBadRequest
}

// ErrorOf is the error a refusal of that kind, said as msg, stands for.
func ErrorOf(kind, msg string) error {
	for _, k := range kinds {
		if k.kind == kind {
			return &remoteError{msg: msg, is: k.err}
		}
	}
	return errors.New(msg)
}

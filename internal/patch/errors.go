package patch

import (
	"errors"
	"fmt"
)

// Kind says why a diff was refused.
type Kind int

const (
	// BadDiff: the text is not a diff we can read, or it is over a limit.
	BadDiff Kind = iota + 1
	// DoesNotApply: the hunks do not match the files, match in more than
	// one place, or the diff is already partly applied.
	DoesNotApply
	// Unsafe: a path leaves the directory, goes through a symbolic link, or
	// names something that is not a regular file.
	Unsafe
)

func (k Kind) String() string {
	switch k {
	case BadDiff:
		return "bad diff"
	case DoesNotApply:
		return "does not apply"
	case Unsafe:
		return "unsafe path"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// RefusedError is returned when the diff itself is the problem. Nothing was
// written. Its message is meant to be shown to whoever wrote the diff (a
// person or a model) so they can fix it.
//
// Any other error from Apply is an I/O error or a cancelled context; those
// are wrapped so errors.Is and errors.As see the cause.
type RefusedError struct {
	Kind Kind
	Msg  string
	// Ambiguous: every hunk that failed matched in several places equally
	// well. The diff is not wrong, only short of context to say where.
	Ambiguous bool
	// Truncated: the diff stops before its end (an answer cut off at the
	// model's token limit), or cannot be told from one that does.
	Truncated bool
}

func (e *RefusedError) Error() string { return e.Msg }

// IsRefused reports whether err means the diff was refused (as opposed to
// an I/O failure), and why.
func IsRefused(err error) (Kind, bool) {
	if err == nil { // the usual case, asked once per path tried: r escapes
		return 0, false
	}
	var r *RefusedError
	if errors.As(err, &r) {
		return r.Kind, true
	}
	return 0, false
}

func refuse(k Kind, format string, args ...any) *RefusedError {
	return &RefusedError{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

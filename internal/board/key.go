package board

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrBadKey is what a refused key (CheckKey, a key holding a secret)
// matches with errors.Is.
var ErrBadKey = errors.New("bad key")

// CheckKey refuses a key no board takes: an empty one, one that is not
// valid UTF-8, and one holding a control character (NUL, a newline, an
// escape, C1 controls), a line or paragraph separator or a bidirectional
// control (which make a key read as another). Every key that enters a
// board passes here (Write, FinishStep, Append); the socket and the CLI
// check early with it too. The error says where the key is wrong, never
// what it holds: a key may carry a secret.
func CheckKey(key string) error {
	if strings.TrimSpace(key) == "" {
		return fmt.Errorf("the key is empty: %w", ErrBadKey)
	}
	for i, r := range key {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(key[i:], "\uFFFD"):
			return fmt.Errorf("the key is not valid UTF-8 (byte %d is 0x%02x): %w", i, key[i], ErrBadKey)
		case unicode.IsControl(r):
			return fmt.Errorf("the key holds a control character, %s, at byte %d: %w", runeName(r), i, ErrBadKey)
		case r == '\u2028' || r == '\u2029' || isBidi(r):
			return fmt.Errorf("the key holds %U at byte %d, a character that changes how text around it reads: %w", r, i, ErrBadKey)
		}
	}
	return nil
}

func runeName(r rune) string {
	switch r {
	case 0:
		return "NUL (U+0000)"
	case '\n':
		return `a newline (\n)`
	case '\r':
		return `a carriage return (\r)`
	case '\t':
		return `a tab (\t)`
	case 0x1b:
		return "ESC (U+001B)"
	}
	return fmt.Sprintf("%U", r)
}

// isBidi: the bidirectional embedding, override and isolate controls.
func isBidi(r rune) bool {
	return (r >= '\u202A' && r <= '\u202E') || (r >= '\u2066' && r <= '\u2069') || r == '\u200E' || r == '\u200F' || r == '\u061C'
}

// ReservedAuthors are the names runner itself writes as: the engine and
// the board step ("runner"), the task a coordinate step posts ("user").
// A writer from outside the run (the socket, the CLI) may not take them,
// or its writes would read as the run's own.
var ReservedAuthors = []string{"runner", "user"}

// CheckOutsideAuthor refuses, for a write or read from outside the run,
// an agent name that is reserved (in any case, with spaces around it) or
// holds what CheckKey refuses in a key.
func CheckOutsideAuthor(agent string) error {
	if agent == "" {
		return nil // the default, "cli"
	}
	norm := strings.ToLower(strings.TrimSpace(agent))
	for _, r := range ReservedAuthors {
		if norm == r {
			return fmt.Errorf("agent %q is reserved for runner itself (%s): an outside writer takes a name of its own: %w",
				agent, strings.Join(ReservedAuthors, ", "), ErrDenied)
		}
	}
	if err := CheckKey(agent); err != nil {
		return fmt.Errorf("agent name: %s", strings.Replace(err.Error(), "the key", "it", 1))
	}
	return nil
}

// checkKeyLocked checks a key entering the board: CheckKey, and that it
// holds no secret. A key is stored, shown and matched as is; masked it
// would become another key (`k-***`), so board('k-' + secret) would miss
// and two such keys would collide. The error shows the key masked.
func (b *Board) checkKeyLocked(key string) error {
	if b.redact != nil {
		if masked := b.redact(key); masked != key {
			return fmt.Errorf("board: key %q holds a secret (masked here): a key is stored and shown as is, so keep secrets in values, not keys: %w", masked, ErrBadKey)
		}
	}
	if err := CheckKey(key); err != nil {
		return fmt.Errorf("board: %w", err)
	}
	return nil
}

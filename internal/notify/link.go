package notify

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// DefaultLinkTTL is how long a single-use link works when its target
// says nothing.
const DefaultLinkTTL = 24 * time.Hour

// The ways a single-use link is refused, for errors.Is.
var (
	ErrLinkUnknown = errors.New("this link does not answer this input")
	ErrLinkExpired = errors.New("this link has expired")
	ErrLinkUsed    = errors.New("this link was used already")
)

// NewLink makes a single-use link's token and what the run keeps of it
// (the token's sha256, in hex): the token itself goes only into the
// notification.
func NewLink() (token, sum string, err error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	token = hex.EncodeToString(b)
	return token, linkSum(token), nil
}

func linkSum(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:])
}

// LinkURL is the address of the single-use link that answers input step
// (visit) of run id on the runner serve at base.
func LinkURL(base, id, step string, visit int, token string) string {
	q := url.Values{"step": {step}, "visit": {strconv.Itoa(visit)}, "token": {token}}
	return strings.TrimSuffix(base, "/") + "/once/" + url.PathEscape(id) + "?" + q.Encode()
}

// CheckLink says whether token answers w at now: it must be the token made
// for this very input, and not expired. (That it was not used is the
// caller's to check: the input has no answer yet.)
func CheckLink(w board.WaitingInput, token string, now time.Time) error {
	if w.Link == "" || token == "" || subtle.ConstantTimeCompare([]byte(linkSum(token)), []byte(w.Link)) != 1 {
		return ErrLinkUnknown
	}
	if w.LinkExpires == nil || !now.Before(*w.LinkExpires) {
		return ErrLinkExpired
	}
	return nil
}

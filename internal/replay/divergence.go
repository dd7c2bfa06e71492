package replay

import (
	"fmt"
	"strings"
)

// Kinds of divergence.
const (
	KindRequest = "request" // a model request differs from the recorded one, or was never recorded
	KindResult  = "result"  // a step's status, goto, error or result differs
	KindPath    = "path"    // the replay ran a step visit the recording did not, or stopped short of one
	KindBoard   = "board"   // every step matched, but the board's entries differ
)

// Divergence is the first place a replay differs from its recording,
// as a person (String) or a tool (its JSON) reads it.
type Divergence struct {
	Kind  string `json:"kind"`
	Label string `json:"label,omitempty"`
	Visit int    `json:"visit,omitempty"`
	Call  int    `json:"call,omitempty"` // the model call, for KindRequest
	// Path is the step visits replayed up to here ("label#visit"), in the
	// order they finished, ending with this one.
	Path     []string `json:"path"`
	Message  string   `json:"message"`
	Recorded string   `json:"recorded,omitempty"` // the recorded outcome (status, goto, error)
	Now      string   `json:"now,omitempty"`      // the replayed one
	Diff     string   `json:"diff,omitempty"`     // unified diff of the requests, results or entries
}

func (d *Divergence) Error() string {
	if d.Label == "" {
		return "replay diverged: " + d.Message
	}
	return fmt.Sprintf("replay diverged at step %s (visit %d): %s", d.Label, d.Visit, d.Message)
}

// pathShown is how many of the last path steps String shows.
const pathShown = 12

// String is the divergence for a person: where, how it got there, what
// was recorded, what happened now, and the diff.
func (d *Divergence) String() string {
	var b strings.Builder
	if d.Label == "" {
		fmt.Fprintf(&b, "replay diverged: %s\n", d.Message)
	} else if d.Kind == KindRequest {
		fmt.Fprintf(&b, "replay diverged at step %s (visit %d), %s\n", d.Label, d.Visit, d.Message)
	} else {
		fmt.Fprintf(&b, "replay diverged at step %s (visit %d): %s\n", d.Label, d.Visit, d.Message)
	}
	if len(d.Path) > 0 {
		p := d.Path
		more := ""
		if len(p) > pathShown {
			more = fmt.Sprintf("(%d earlier) … ", len(p)-pathShown)
			p = p[len(p)-pathShown:]
		}
		fmt.Fprintf(&b, "  path: %s%s\n", more, strings.Join(p, " → "))
	}
	if d.Recorded != "" || d.Now != "" {
		fmt.Fprintf(&b, "  recorded: %s\n  now:      %s\n", orNone(d.Recorded), orNone(d.Now))
	}
	b.WriteString(d.Diff)
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(nothing)"
	}
	return s
}

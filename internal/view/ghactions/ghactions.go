// Package ghactions speaks GitHub Actions' workflow commands: annotations,
// log groups and the stop-commands switch, each escaped by GitHub's rules so
// that text runner does not control (a file name or a message a model
// wrote, a step's output) can never become a command of its own. It also
// writes the Markdown run summary ($GITHUB_STEP_SUMMARY). It imports
// only internal/view/mdtext (the Markdown escaper) of ours: the CLI hands
// it plain values.
package ghactions

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Enabled reports whether the process runs as a GitHub Actions step.
func Enabled(getenv func(string) string) bool { return getenv("GITHUB_ACTIONS") == "true" }

// EscapeData escapes a command's message (what follows the second "::"):
// the runner reads % as the start of an escape and ends a command at a
// line break, so both are encoded.
func EscapeData(s string) string {
	return dataEscaper.Replace(s)
}

// EscapeProperty escapes a property's value (file=, title=, ...): there
// ":" would end the properties and "," start the next one.
func EscapeProperty(s string) string {
	return propEscaper.Replace(s)
}

var (
	dataEscaper = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	propEscaper = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
	// breakEscaper keeps a formatted command on its line.
	breakEscaper = strings.NewReplacer("\r", "%0D", "\n", "%0A")
)

// Annotation is an error, warning or notice shown on a file's line in the
// pull request and on the run's page.
type Annotation struct {
	Level   string // error, warning or notice ("" is error)
	File    string // relative to the repository's root; "" for none
	Line    int    // 0 for none
	Col     int    // 0 for none
	Title   string
	Message string
}

// Map returns a with f applied to its text (file, title, message): the
// CLI masks secrets with it before the text is escaped.
func (a Annotation) Map(f func(string) string) Annotation {
	a.File, a.Title, a.Message = f(a.File), f(a.Title), f(a.Message)
	return a
}

// String is the annotation's workflow command, one line.
func (a Annotation) String() string {
	level := a.Level
	switch level {
	case "warning", "notice":
	default:
		level = "error"
	}
	var props []string
	if a.File != "" {
		props = append(props, "file="+EscapeProperty(a.File))
		if a.Line > 0 {
			props = append(props, fmt.Sprintf("line=%d", a.Line))
			if a.Col > 0 {
				props = append(props, fmt.Sprintf("col=%d", a.Col))
			}
		}
	}
	if a.Title != "" {
		props = append(props, "title="+EscapeProperty(a.Title))
	}
	cmd := "::" + level
	if len(props) > 0 {
		cmd += " " + strings.Join(props, ",")
	}
	return cmd + "::" + EscapeData(a.Message)
}

// Group starts a collapsible group of log lines titled title.
func Group(title string) string { return "::group::" + EscapeData(title) }

// EndGroup ends the group Group started.
const EndGroup = "::endgroup::"

// NewToken is a stop-commands token no one can guess: output that does not
// know it cannot turn commands back on.
func NewToken() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand panics rather than return short)
	return "runner-" + hex.EncodeToString(b)
}

// Stream is a writer (stderr) whose text is never read as workflow
// commands: it starts with ::stop-commands::TOKEN, so whatever steps,
// models and logs write through it is shown as written, and Commands
// turns commands on only for runner's own lines. Every write and command
// goes through one lock and one file descriptor, so no line of output can
// fall between the switch turning on and off again.
type Stream struct {
	mu      sync.Mutex
	w       io.Writer
	token   string
	mask    func(string) string
	midLine bool // the last write did not end its line
	stopped bool
}

// NewStream starts a stream on w with a fresh token. mask hides secrets in
// the commands' text (nil: none); what goes through Write is the caller's
// to mask.
func NewStream(w io.Writer, mask func(string) string) *Stream {
	return newStream(w, NewToken(), mask)
}

func newStream(w io.Writer, token string, mask func(string) string) *Stream {
	if mask == nil {
		mask = func(s string) string { return s }
	}
	s := &Stream{w: w, token: token, mask: mask}
	io.WriteString(w, "::stop-commands::"+token+"\n")
	s.stopped = true
	return s
}

// Write passes p on, with commands off.
func (s *Stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(p) == 0 {
		return 0, nil
	}
	n, err := s.w.Write(p)
	if n > 0 {
		s.midLine = p[n-1] != '\n'
	}
	return n, err
}

// Commands writes runner's own command lines, each on a line of its own,
// with commands turned on around them. Each line is masked again (its
// fields should have been masked before escaping, see Annotation.Map);
// a line break inside one (a caller's bug) is escaped rather than let
// through to start a line of its own.
func (s *Stream) Commands(lines ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	if s.midLine {
		b.WriteString("\n") // a command is read only at the start of a line
		s.midLine = false
	}
	if s.stopped {
		b.WriteString("::" + s.token + "::\n")
	}
	for _, l := range lines {
		b.WriteString(breakEscaper.Replace(s.mask(l)) + "\n")
	}
	if s.stopped {
		b.WriteString("::stop-commands::" + s.token + "\n")
	}
	io.WriteString(s.w, b.String())
}

// Close turns commands back on for what the job's next steps print.
func (s *Stream) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped {
		return
	}
	prefix := ""
	if s.midLine {
		prefix = "\n"
	}
	io.WriteString(s.w, prefix+"::"+s.token+"::\n")
	s.stopped = false
}

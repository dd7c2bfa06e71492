// Package shellsafe decides where a ${{ }} value may stand in a shell
// script and prepares the script so that each value travels in an
// environment variable and never becomes shell syntax.
//
// A ${{ }} in a shell script (command `run:`, test `command:`) never has
// its value pasted into the script's text. Each one becomes a reference to
// an environment variable that holds the value (the approach of GitHub's
// hardening guide for Actions), written for where it stands, which the
// shell parser tells exactly: `"${RUNNER_EXPR_1}"` as a word,
// `${RUNNER_EXPR_1}` inside "…" or an unquoted heredoc, `'"${RUNNER_EXPR_1}"'`
// inside '…'. The shell expands a variable once and never reads its value
// as syntax, so no quoting rule can be wrong. Places where even that is
// unsafe (a quoted heredoc, which expands nothing; a name; text another
// shell or interpreter runs, as with eval or sh -c) are refused by
// [Prepare], so a plan is refused when it loads; in arithmetic, which bash
// evaluates recursively (`a[$(cmd)]` runs cmd), the value must be a plain
// integer, checked by [Script.Command] when the step runs.
//
// The package knows nothing of expressions or plans: the engine hands it
// a script cut into literal text and value places ([Segment]) and, at run
// time, the values. It imports only the standard library and the shell
// parser (mvdan.cc/sh/v3/syntax).
package shellsafe

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A Segment is a piece of a script template: literal script text, or
// (Value) the place of one value, whose Text is the expression that gives
// it, for messages.
type Segment struct {
	Text  string
	Value bool
}

// Error is a place in a script that cannot take a value safely.
type Error struct {
	Segment int    // index of the segment the problem is reported at
	Offset  int    // bytes into that segment
	Msg     string // why, and what to do instead
}

func (e Error) Error() string { return e.Msg }

// Script is a script rewritten with environment references in place of
// its values, ready to be given values by Command.
type Script struct {
	text  string
	slots []slot // one per value, in order
}

type slot struct {
	name  string // environment variable holding the value
	src   string // the expression giving the value, for messages
	arith bool   // the value must be a plain integer
}

// Text is the rewritten script, before any value is known.
func (s *Script) Text() string { return s.text }

// how a value's reference is quoted where it stands
type quoting int

const (
	qBare         quoting = iota // part of an unquoted word
	qDouble                      // inside "…", or an unquoted heredoc body
	qSingle                      // inside '…'
	qDollarSingle                // inside $'…'
	qComment                     // in a comment: nothing runs it
)

// envName names the variable of the i-th value (from 0).
func envName(i int) string { return "RUNNER_EXPR_" + strconv.Itoa(i+1) }

// Prepare finds where each value of the script stands and builds the
// rewritten script. It fails for a script that does not parse (where a
// value would land cannot be told; a script without values that does not
// parse is refused too, so it is found at load, not after the paid steps
// before it) and for places that cannot take a value safely.
func Prepare(segs []Segment) (*Script, []Error) {
	prefix := standInPrefix(segs)
	src, values := standIns(segs, prefix)
	f, err := parse(src, syntax.KeepComments(true))
	if err != nil {
		return nil, []Error{parseError(err, values)}
	}
	if len(values) == 0 {
		return &Script{text: src}, nil
	}
	w := &walker{prefix: prefix, found: make([]*finding, len(values))}
	w.declared(f)
	syntax.Walk(f, w.visit)
	return rewrite(segs, w.found)
}

// standInPrefix is a prefix of letters no literal text holds: a unique
// word stands in for each value, and letters and digits parse as a word
// (or a name, or an arithmetic variable) wherever they land.
func standInPrefix(segs []Segment) string {
	var lits strings.Builder
	for _, s := range segs {
		if !s.Value {
			lits.WriteString(s.Text)
		}
	}
	prefix := "RUNNERPH"
	for strings.Contains(lits.String(), prefix) {
		prefix += "Q"
	}
	return prefix
}

// standIns is the script with a stand-in word for each value, and the
// indexes of the value segments.
func standIns(segs []Segment, prefix string) (string, []int) {
	var b strings.Builder
	var values []int
	for i, s := range segs {
		if !s.Value {
			b.WriteString(s.Text)
			continue
		}
		fmt.Fprintf(&b, "%s%dX", prefix, len(values))
		values = append(values, i)
	}
	return b.String(), values
}

// parse reads src as bash, else as POSIX sh (whose grammar differs in a
// few places bash reads otherwise), reporting bash's error.
func parse(src string, opts ...syntax.ParserOption) (*syntax.File, error) {
	f, err := syntax.NewParser(append(opts, syntax.Variant(syntax.LangBash))...).Parse(strings.NewReader(src), "")
	if err == nil {
		return f, nil
	}
	f, err2 := syntax.NewParser(append(opts, syntax.Variant(syntax.LangPOSIX))...).Parse(strings.NewReader(src), "")
	if err2 == nil {
		return f, nil
	}
	return nil, err
}

// parseError reports a script that does not parse: at the error for a
// script without values, else at its first value.
func parseError(err error, values []int) Error {
	msg := err.Error()
	var pe syntax.ParseError
	at := 0
	if errors.As(err, &pe) {
		msg = fmt.Sprintf("line %d: %s", pe.Pos.Line(), pe.Text)
		at = int(pe.Pos.Offset())
	}
	if len(values) == 0 {
		return Error{0, at, "the script does not parse as shell (" + msg + ")"}
	}
	return Error{values[0], 0, "the script does not parse as shell (" + msg + "), so where its ${{ }} values would land cannot be told"}
}

// rewrite writes each value's reference where it stood, or reports why
// it cannot stand there.
func rewrite(segs []Segment, found []*finding) (*Script, []Error) {
	s := &Script{slots: make([]slot, len(found))}
	var errs []Error
	var out strings.Builder
	k := 0
	for i, seg := range segs {
		if !seg.Value {
			out.WriteString(seg.Text)
			continue
		}
		fd := found[k]
		s.slots[k] = slot{name: envName(k), src: seg.Text}
		if msg := refusal(fd, segs[:i]); msg != "" {
			errs = append(errs, Error{Segment: i, Msg: msg})
		} else {
			s.slots[k].arith = fd.arith
			out.WriteString(reference(fd.spelling(), s.slots[k].name))
		}
		k++
	}
	s.text = out.String()
	return s, errs
}

// refusal is why a value found at fd, after the segments before, cannot
// stand there ("" when it can).
func refusal(fd *finding, before []Segment) string {
	switch {
	case fd == nil:
		return "cannot tell where this ${{ }} stands in the script"
	case fd.refuse != "":
		return fd.refuse
	case fd.quote != qSingle && fd.quote != qComment && escaped(before):
		return "a ${{ }} right after a backslash: the backslash would quote the value's reference, not the value"
	}
	return ""
}

// spelling is the quoting the reference is written in.
func (fd *finding) spelling() quoting {
	if fd.quote == qBare && fd.arith && fd.inArith {
		// dash reads no quotes in $(( )); the value is a checked integer
		return qDouble
	}
	return fd.quote
}

// escaped reports whether the literal text before a value ends in an odd
// number of backslashes.
func escaped(before []Segment) bool {
	n := 0
	for i := len(before) - 1; i >= 0; i-- {
		if before[i].Value {
			break
		}
		s := before[i].Text
		j := len(s)
		for j > 0 && s[j-1] == '\\' {
			j--
		}
		n += len(s) - j
		if j > 0 {
			break
		}
	}
	return n%2 == 1
}

// reference is how the variable name is written where the value stood.
func reference(q quoting, name string) string {
	switch q {
	case qDouble, qComment:
		return "${" + name + "}"
	case qSingle:
		return `'"${` + name + `}"'`
	case qDollarSingle:
		return `'"${` + name + `}"$'`
	}
	return `"${` + name + `}"`
}

// Command is a script ready for `sh -c`, with the environment that
// carries its values. Close removes any file a large value was handed
// over in.
type Command struct {
	Script string   // the script, with references in place of the values
	Env    []string // NAME=value for each value, to add to the process's environment
	dir    string
}

// Close removes the files large values were written to.
func (c *Command) Close() error {
	if c == nil || c.dir == "" {
		return nil
	}
	return os.RemoveAll(c.dir)
}

// A value up to envValueMax bytes goes in the environment while the
// values together stay under envTotalMax; a larger one is written to a
// private temporary file that the script reads first. Linux refuses an
// exec whose single environment string passes 128 KiB (MAX_ARG_STRLEN),
// or whose arguments and environment together pass a quarter of the stack
// limit (often 2 MiB).
const (
	envValueMax = 32 << 10
	envTotalMax = 256 << 10
)

// Command asks value for each value in order (i from 0) and hands them
// over. It fails, with nothing left behind, when value does, or when a
// value cannot travel safely: a NUL byte, or anything but a plain integer
// where the shell evaluates arithmetic.
func (s *Script) Command(value func(i int) (string, error)) (*Command, error) {
	c := &Command{Script: s.text}
	h := handOver{c: c}
	for i, sl := range s.slots {
		v, err := value(i)
		if err == nil {
			err = sl.check(v)
		}
		if err == nil {
			err = h.add(sl, v)
		}
		if err != nil {
			c.Close()
			return nil, err
		}
	}
	// On the script's first line, so the shell's line numbers stay right.
	c.Script = h.pre.String() + c.Script
	return c, nil
}

// check refuses a value its place cannot take.
func (sl slot) check(v string) error {
	if strings.IndexByte(v, 0) >= 0 {
		return fmt.Errorf("${{ %s }}: the value holds a NUL byte, which no shell variable can hold", sl.src)
	}
	if sl.arith && !plainInteger(v) {
		return fmt.Errorf("${{ %s }} stands in shell arithmetic, where only a plain integer is safe; the value is %s", sl.src, quoteShort(v))
	}
	return nil
}

// handOver puts values in a command's environment, or in files for the
// large ones, which the script's preamble reads.
type handOver struct {
	c     *Command
	pre   strings.Builder
	total int
}

func (h *handOver) add(sl slot, v string) error {
	if len(v) <= envValueMax && h.total+len(v) <= envTotalMax {
		h.total += len(v)
		h.c.Env = append(h.c.Env, sl.name+"="+v)
		return nil
	}
	if h.c.dir == "" {
		dir, err := os.MkdirTemp("", "runner-values-")
		if err != nil {
			return fmt.Errorf("a value too large for the environment: %w", err)
		}
		h.c.dir = dir
	}
	file := h.c.dir + "/" + sl.name
	if err := os.WriteFile(file, []byte(v), 0o600); err != nil {
		return fmt.Errorf("a value too large for the environment: %w", err)
	}
	h.c.Env = append(h.c.Env, sl.name+"_FILE="+file)
	// $(cat) drops trailing newlines; the x keeps them.
	fmt.Fprintf(&h.pre, `%s=$(cat "$%s_FILE" && printf x) || exit 1; %s=${%s%%x}; `, sl.name, sl.name, sl.name, sl.name)
	return nil
}

func plainInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || len(s) > 19 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func quoteShort(s string) string {
	if len(s) > 60 {
		return strconv.Quote(s[:60]) + "…"
	}
	return strconv.Quote(s)
}

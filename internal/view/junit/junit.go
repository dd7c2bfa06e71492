// Package junit writes a run's test steps as JUnit XML, the report every
// CI system reads (runner report --format junit). A test step is one whose
// type has test results (engine.ShowsTests), whatever its name.
//
// It imports board, engine (for the types' Caps and labels), plans (to
// read the saved plan's continue_on_error) and testrun (the results'
// shape); nothing that runs a plan.
package junit

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/testrun"
)

// Suites is the document: one suite per test step visit, and one for the
// plan's steps themselves. It is written (Write) in the form the common
// JUnit schema (the Ant/Jenkins JUnit.xsd) allows: the run's ID, and the
// facts of a case the schema has no attribute for, are the suite's
// properties; the totals, which testsuites may not carry, are its
// suites' sums.
type Suites struct {
	Name                             string // the run's ID
	Tests, Failures, Errors, Skipped int
	Time                             string
	Suites                           []Suite
}

// Suite is a test step's visit (or the plan's steps).
type Suite struct {
	Name                             string
	Tests, Failures, Errors, Skipped int
	Time                             string
	Timestamp                        string // when it started, UTC, without a zone
	Cases                            []Case
	SystemOut                        string
}

// Case is one test case.
type Case struct {
	Name, Classname string
	File            string // "" for none
	Line            int    // 0 for none
	Time            string
	Failure         *Message
	Error           *Message
	Skipped         *Message
}

// Message is a failure's, error's or skip's text.
type Message struct {
	Message, Type, Text string
}

// FromBoard builds the document of a run: a suite per visit of each step
// whose type has test results (types: engine.ShowsTests; nil: none), with
// a case per failed test (errored for a panic, a timeout or a setup
// error) and per build error. The test step records its failures, not
// the names of the tests that passed: a suite's tests attribute is the
// suite's count, and its passing tests are one case saying how many. The
// suite "steps" has a case per step visit of the plan. Files are relative
// to the run's workdir (see FromBoardAt).
func FromBoard(b *board.Board, types *engine.Registry) Suites {
	return FromBoardAt(b, types, b.Run().Workdir)
}

// FromBoardAt is FromBoard with test files relative to root (the
// repository's root, as annotations say them; RepoPath).
//
// A step is named by its label path (Names): a test in a parallel group's
// step is of class "group/label.framework", the group's own case of class
// "steps.group". A failure the plan tolerates (Tolerated) is not a
// failure: it is skipped with type "tolerated", as pytest reports an
// expected failure, so the document counts as failures what failed the
// run.
func FromBoardAt(b *board.Board, types *engine.Registry, root string) Suites {
	run := b.Run()
	doc := Suites{Name: run.ID}
	var total int64
	steps := Suite{Name: "steps", Timestamp: stamp(run.StartedAt)}
	recs := b.Steps()
	names := NamesOf(recs)
	tol := Tolerated(b)
	for _, rec := range recs {
		total += rec.DurationMS
		tolerated := IsTolerated(tol, rec.Label)
		c := Case{Name: visitName(rec.Label, rec.Visit), Classname: "steps." + names.Of(rec.Label, 1), Time: secs(rec.DurationMS)}
		switch {
		case rec.Status == board.StatusFailed && tolerated:
			c.Skipped = &Message{Message: "failed (tolerated): " + firstLine(rec.Error), Type: "tolerated", Text: rec.Error}
			steps.Skipped++
		case rec.Status == board.StatusFailed:
			c.Failure = &Message{Message: firstLine(rec.Error), Type: rec.Type, Text: rec.Error}
			steps.Failures++
		case rec.Status == board.StatusSucceeded:
		default: // skipped, canceled, interrupted
			c.Skipped = &Message{Message: rec.Status + optional(": ", firstLine(rec.Error))}
			steps.Skipped++
		}
		steps.Cases = append(steps.Cases, c)
		steps.Tests++
		if types.Caps(rec.Type).Shows.Has(engine.ShowsTests) {
			if s, ok := testSuite(rec, names.Of(rec.Label, rec.Visit), tolerated, func(f string) string {
				return RepoPath(root, run.Workdir, rec.Inputs["dir"], f)
			}); ok {
				doc.Suites = append(doc.Suites, s)
			}
		}
	}
	steps.Time = secs(total)
	doc.Suites = append(doc.Suites, steps)
	for _, s := range doc.Suites {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
	}
	doc.Time = secs(total)
	return doc
}

// testSuite is a test step visit's suite, named name; false when it has
// no result. file says where a test's file is.
func testSuite(rec board.StepRecord, name string, tolerated bool, file func(string) string) (Suite, bool) {
	var r testrun.Result
	if len(rec.Result) == 0 || json.Unmarshal(rec.Result, &r) != nil || r.Outcome == "" {
		return Suite{}, false
	}
	s := Suite{Name: name, Time: secs(rec.DurationMS), Timestamp: stamp(rec.StartedAt),
		Tests: r.Counts.Total, Skipped: r.Counts.Skipped}
	class := name + "." + r.Framework
	// fail marks c failed (or errored), or skipped when tolerated.
	fail := func(c *Case, m *Message, errored bool) {
		switch {
		case tolerated:
			c.Skipped = &Message{Message: "failed (tolerated): " + m.Message, Type: "tolerated", Text: m.Text}
			s.Skipped++
		case errored:
			c.Error = m
			s.Errors++
		default:
			c.Failure = m
			s.Failures++
		}
	}
	for _, f := range r.Failures {
		c := Case{Name: f.ID, Classname: class, File: file(f.File), Line: f.Line, Time: "0"}
		text := f.Message
		if f.Excerpt != "" {
			text = f.Excerpt
		}
		fail(&c, &Message{Message: f.Message, Type: f.Kind, Text: text}, f.Kind != testrun.KindFail)
		s.Cases = append(s.Cases, c)
	}
	for _, e := range r.BuildErrors {
		path := file(e.File)
		where := path
		if e.Line > 0 {
			where = fmt.Sprintf("%s:%d", path, e.Line)
		}
		c := Case{Name: "build " + where, Classname: class, File: path, Line: e.Line, Time: "0"}
		fail(&c, &Message{Message: e.Message, Type: "build_error", Text: e.Message}, true)
		s.Cases = append(s.Cases, c)
	}
	if n := r.Counts.Passed; n > 0 {
		s.Cases = append(s.Cases, Case{Name: fmt.Sprintf("%d passed tests", n), Classname: class, Time: "0"})
	}
	if len(s.Cases) == 0 && !r.Passed {
		// The suite did not run to a verdict (outcome error, no_tests,
		// timeout before any result): one errored case says why.
		c := Case{Name: name, Classname: class, Time: secs(rec.DurationMS)}
		fail(&c, &Message{Message: r.Outcome, Type: r.Outcome, Text: r.Summary}, true)
		s.Cases = append(s.Cases, c)
	}
	if min := s.Failures + s.Errors + s.Skipped; s.Tests < min {
		s.Tests = min
	}
	return s, true
}

// The document as the schema has it: testsuites without attributes;
// each testsuite with its package, id and hostname, its properties,
// cases, system-out and system-err, in that order; a testcase with its
// name, classname and time only; a skip without a type.
type xSuites struct {
	XMLName xml.Name `xml:"testsuites"`
	Suites  []xSuite `xml:"testsuite"`
}

type xSuite struct {
	Name       string      `xml:"name,attr"`
	Package    string      `xml:"package,attr"`
	ID         int         `xml:"id,attr"`
	Timestamp  string      `xml:"timestamp,attr"`
	Hostname   string      `xml:"hostname,attr"`
	Tests      int         `xml:"tests,attr"`
	Failures   int         `xml:"failures,attr"`
	Errors     int         `xml:"errors,attr"`
	Skipped    int         `xml:"skipped,attr"`
	Time       string      `xml:"time,attr"`
	Properties xProperties `xml:"properties"` // required, even empty
	Cases      []xCase     `xml:"testcase"`
	SystemOut  string      `xml:"system-out"`
	SystemErr  string      `xml:"system-err"`
}

type xProperties struct {
	Property []xProperty `xml:"property"`
}

type xProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type xCase struct {
	Name      string    `xml:"name,attr"`
	Classname string    `xml:"classname,attr"`
	Time      string    `xml:"time,attr"`
	Skipped   *xSkip    `xml:"skipped"`
	Error     *xProblem `xml:"error"`
	Failure   *xProblem `xml:"failure"`
}

type xSkip struct {
	Message string `xml:"message,attr,omitempty"`
	Text    string `xml:",chardata"`
}

type xProblem struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// Property names of the facts the schema has no attribute for. A case's
// are named by its place among its suite's cases, from 1.
const (
	PropRunID = "runner.run.id"
	// PropCase is the prefix of a case's facts: testcase.N.file,
	// testcase.N.line and testcase.N.skipped.type.
	PropCase = "testcase."
)

// hostname is every suite's: the schema requires one and says to use
// localhost when it is not known, and the board does not say where a
// test ran.
const hostname = "localhost"

// wire is doc as the schema has it.
func wire(doc Suites) xSuites {
	out := xSuites{Suites: []xSuite{}}
	for i, s := range doc.Suites {
		name := s.Name
		if strings.TrimSpace(name) == "" {
			name = "unnamed" // the schema wants a name of at least one character
		}
		ts := s.Timestamp
		if ts == "" {
			ts = stamp(time.Time{})
		}
		x := xSuite{Name: name, Package: name, ID: i, Timestamp: ts, Hostname: hostname, Tests: s.Tests,
			Failures: s.Failures, Errors: s.Errors, Skipped: s.Skipped, Time: decimal(s.Time), SystemOut: s.SystemOut}
		if doc.Name != "" {
			x.Properties.Property = append(x.Properties.Property, xProperty{PropRunID, doc.Name})
		}
		for j, c := range s.Cases {
			prefix := fmt.Sprintf("%s%d.", PropCase, j+1)
			if c.File != "" {
				x.Properties.Property = append(x.Properties.Property, xProperty{prefix + "file", c.File})
			}
			if c.Line > 0 {
				x.Properties.Property = append(x.Properties.Property, xProperty{prefix + "line", fmt.Sprint(c.Line)})
			}
			xc := xCase{Name: c.Name, Classname: c.Classname, Time: decimal(c.Time)}
			if c.Skipped != nil {
				xc.Skipped = &xSkip{Message: c.Skipped.Message, Text: c.Skipped.Text}
				if c.Skipped.Type != "" {
					x.Properties.Property = append(x.Properties.Property, xProperty{prefix + "skipped.type", c.Skipped.Type})
				}
			}
			xc.Failure, xc.Error = problem(c.Failure, "failure"), problem(c.Error, "error")
			x.Cases = append(x.Cases, xc)
		}
		out.Suites = append(out.Suites, x)
	}
	return out
}

// problem is a failure or error; the schema requires its type (def when
// it has none).
func problem(m *Message, def string) *xProblem {
	if m == nil {
		return nil
	}
	p := &xProblem{Message: m.Message, Type: m.Type, Text: m.Text}
	if p.Type == "" {
		p.Type = def
	}
	return p
}

// decimal is a time in seconds as the schema's xs:decimal: "0" for none.
func decimal(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

// stamp is a suite's timestamp as the schema has it: UTC, no zone.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05") }

// Write writes doc as an XML document valid against the common JUnit
// schema. Text and attributes are escaped by encoding/xml; characters
// XML 1.0 cannot hold at all (control characters such as a colour code's
// ESC, lone surrogates, U+FFFE) are dropped first, so the document
// always parses.
func Write(w io.Writer, doc Suites) error {
	doc = clean(doc)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	e := xml.NewEncoder(w)
	e.Indent("", "  ")
	if err := e.Encode(wire(doc)); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func clean(doc Suites) Suites {
	doc.Name = Clean(doc.Name)
	suites := make([]Suite, len(doc.Suites))
	for i, s := range doc.Suites {
		s.Name, s.SystemOut = Clean(s.Name), Clean(s.SystemOut)
		cases := make([]Case, len(s.Cases))
		for j, c := range s.Cases {
			c.Name, c.Classname, c.File = Clean(c.Name), Clean(c.Classname), Clean(c.File)
			c.Failure, c.Error, c.Skipped = cleanMsg(c.Failure), cleanMsg(c.Error), cleanMsg(c.Skipped)
			cases[j] = c
		}
		s.Cases = cases
		suites[i] = s
	}
	doc.Suites = suites
	return doc
}

func cleanMsg(m *Message) *Message {
	if m == nil {
		return nil
	}
	return &Message{Message: Clean(m.Message), Type: Clean(m.Type), Text: Clean(m.Text)}
}

// Clean drops what XML 1.0 cannot hold: characters outside its Char
// production and bytes that are not UTF-8.
func Clean(s string) string {
	ok := true
	for _, r := range s {
		if !isXMLChar(r) {
			ok = false
			break
		}
	}
	if ok && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				continue // not UTF-8
			}
		}
		if isXMLChar(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isXMLChar(r rune) bool {
	return r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

func secs(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }

func visitName(label string, visit int) string {
	if visit > 1 {
		return fmt.Sprintf("%s#%d", label, visit)
	}
	return label
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func optional(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

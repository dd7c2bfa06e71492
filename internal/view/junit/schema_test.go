package junit

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/testrun"
	"github.com/planrunner/runner/internal/testutil/hostile"
	"github.com/planrunner/runner/internal/testutil/testtool"
)

// schema is the common JUnit schema (testdata/README.md says whence).
const schema = "testdata/JUnit.xsd"

// xmllint validates a document against the schema with libxml2's
// validator; "" when valid, else what it said.
func xmllint(t *testing.T, doc []byte) string {
	t.Helper()
	bin := testtool.LookPath(t, "xmllint", ".ci/install installs it with apt-get (libxml2-utils)")
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--noout", "--nonet", "--schema", schema, path).CombinedOutput()
	if err != nil {
		return string(out) + err.Error()
	}
	return ""
}

const schemaPlan = `version: 1
name: ci
steps:
  - {label: unit, type: test, run: go test ./...}
  - {label: flaky, type: test, run: pytest, continue_on_error: true}
  - {label: build, type: command, run: make}
`

var start = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// run is a board whose test step unit ended with r (and, when tolerated
// is set, step flaky too), and whose command build ended with status.
func run(t *testing.T, r testrun.Result, tolerated *testrun.Result, status, buildErr string) *board.Board {
	t.Helper()
	fin := start.Add(time.Minute)
	b := board.New(board.Run{ID: "01SCHEMA", PlanPath: "plan.yaml", PlanSource: schemaPlan, Status: board.StatusSucceeded,
		StartedAt: start, FinishedAt: &fin, Workdir: "/w"})
	add := func(label, typ, status, errText string, res any) {
		raw, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.AddStep(board.StepRecord{Label: label, Visit: 1, Type: typ, Status: status, Error: errText, StartedAt: start,
			FinishedAt: start.Add(1500 * time.Millisecond), DurationMS: 1500, Result: raw}); err != nil {
			t.Fatal(err)
		}
	}
	st := board.StatusSucceeded
	if !r.Passed {
		st = board.StatusFailed
	}
	add("unit", "test", st, r.Summary, r)
	if tolerated != nil {
		add("flaky", "test", board.StatusFailed, tolerated.Summary, *tolerated)
	}
	add("build", "command", status, buildErr, map[string]any{"exit_code": 0})
	return b
}

// TestJUnitValidatesAgainstTheSchema: the document of a passing, a
// failing, an errored, a skipped and a hostile-named run is valid
// against the common JUnit schema, checked by libxml2's validator, and
// keeps the facts the schema has no attribute for (a case's file and
// line, a tolerated failure's type, the run's ID) as its suites'
// properties.
func TestJUnitValidatesAgainstTheSchema(t *testing.T) {
	passing := testrun.Result{Passed: true, Outcome: "passed", Framework: "go", Counts: testrun.Counts{Total: 3, Passed: 3}}
	failing := testrun.Result{Outcome: "failed", Framework: "go", Counts: testrun.Counts{Total: 3, Passed: 2, Failed: 1},
		Summary:  "FAILED: 1 of 3",
		Failures: []testrun.Failure{{ID: "pkg.TestAdd", File: "calc_test.go", Line: 7, Message: "want 5, got 4", Kind: testrun.KindFail}}}
	errored := testrun.Result{Outcome: "failed", Framework: "go", Counts: testrun.Counts{Total: 2, Passed: 1, Failed: 1},
		Failures:    []testrun.Failure{{ID: "pkg.TestBoom", File: "boom_test.go", Line: 3, Message: "panic: nil map", Kind: testrun.KindPanic}},
		BuildErrors: []testrun.BuildError{{File: "x.go", Line: 2, Col: 1, Message: "undefined: y"}}}
	noVerdict := testrun.Result{Outcome: "error", Framework: "pytest", Summary: "collection failed"}
	flaky := testrun.Result{Outcome: "failed", Framework: "pytest", Counts: testrun.Counts{Total: 2, Passed: 1, Failed: 1},
		Failures: []testrun.Failure{{ID: "t.py::test_x", File: "t.py", Line: 9, Message: "assert 1 == 2", Kind: testrun.KindFail}}}
	for _, tc := range []struct {
		name string
		doc  func(t *testing.T) Suites
		// want are properties that must be on some suite.
		want []string
	}{
		{"passing", func(t *testing.T) Suites {
			return FromBoard(run(t, passing, nil, board.StatusSucceeded, ""), steps.Registry())
		}, []string{"runner.run.id=01SCHEMA"}},
		{"failing", func(t *testing.T) Suites {
			return FromBoard(run(t, failing, nil, board.StatusFailed, "exit status 2"), steps.Registry())
		}, []string{"testcase.1.file=calc_test.go", "testcase.1.line=7"}},
		{"errored", func(t *testing.T) Suites {
			return FromBoard(run(t, errored, &noVerdict, board.StatusSucceeded, ""), steps.Registry())
		}, []string{"testcase.1.file=boom_test.go", "testcase.2.file=x.go", "testcase.2.line=2", "testcase.1.skipped.type=tolerated"}},
		{"skipped and tolerated", func(t *testing.T) Suites {
			return FromBoard(run(t, passing, &flaky, "skipped", ""), steps.Registry())
		}, []string{"testcase.1.file=t.py", "testcase.1.line=9", "testcase.1.skipped.type=tolerated", "testcase.2.skipped.type=tolerated"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, tc.doc(t)); err != nil {
				t.Fatal(err)
			}
			if msg := xmllint(t, b.Bytes()); msg != "" {
				t.Fatalf("not valid against %s:\n%s\n%s", schema, msg, b.String())
			}
			props := map[string]bool{}
			var doc xSuites
			if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			for _, s := range doc.Suites {
				for _, p := range s.Properties.Property {
					props[p.Name+"="+p.Value] = true
				}
			}
			for _, w := range tc.want {
				if !props[w] {
					t.Errorf("no property %s; have %v", w, props)
				}
			}
		})
	}
	// Hostile values in every name, text and file: still valid, and read
	// back (minus what XML cannot hold).
	for _, v := range append(hostile.Values, hostile.Value{Name: "blank", Text: " \t\n "}, hostile.Value{Name: "empty"}) {
		t.Run("hostile "+v.Name, func(t *testing.T) {
			doc := Suites{Name: v.Text, Suites: []Suite{{Name: v.Text, SystemOut: v.Text, Timestamp: "2026-01-02T03:04:05", Cases: []Case{
				{Name: v.Text, Classname: v.Text, File: v.Text, Line: 3, Failure: &Message{Message: v.Text, Type: v.Text, Text: v.Text}},
				{Name: v.Text, Classname: v.Text, Error: &Message{Message: v.Text, Text: v.Text}},
				{Name: v.Text, Classname: v.Text, Skipped: &Message{Message: v.Text, Type: v.Text, Text: v.Text}}}}}}
			var b bytes.Buffer
			if err := Write(&b, doc); err != nil {
				t.Fatal(err)
			}
			if msg := xmllint(t, b.Bytes()); msg != "" {
				t.Fatalf("not valid against %s:\n%s\n%s", schema, msg, b.String())
			}
			if strings.Count(b.String(), "<testcase ") != 3 {
				t.Errorf("cases:\n%s", b.String())
			}
		})
	}
}

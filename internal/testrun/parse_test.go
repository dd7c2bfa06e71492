package testrun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of the parser tests")

// golden is what a parser test compares: the whole result a plan sees,
// less what depends on the run (duration).
type golden struct {
	Outcome     string       `json:"outcome"`
	Passed      bool         `json:"passed"`
	Counts      Counts       `json:"counts"`
	Failures    []Failure    `json:"failures"`
	BuildErrors []BuildError `json:"build_errors"`
	Summary     string       `json:"summary"`
}

// capture is output of a real runner kept in testdata.
type capture struct {
	fw, name string
	exit     int
	killed   bool
	dir      string // under testdata; default the framework's dir
}

var captures = []capture{
	{"go", "mixed", 1, false, "go/proj"},
	{"go", "timeout", 1, false, "go/proj"},
	{"go", "plain", 1, false, "go/proj"},
	{"go", "killed", -1, true, "go/proj"}, // stopped by the step's timeout; "a/b" is one subtest's name
	// testify, quicktest and gotest.tools, whose report is under the log line
	{"go", "asserts", 1, false, "go/asserts"},
	{"go", "asserts-plain", 1, false, "go/asserts"}, // the same without -json
	{"pytest", "failures", 1, false, ""},
	{"pytest", "collection", 2, false, ""},
	{"unittest", "failures", 1, false, ""}, // python -m unittest: a module that does not import, subtests, a docstring
	{"unittest", "verbose", 1, false, ""},
	{"unittest", "syntax", 1, false, ""}, // a test module with a syntax error
	{"unittest", "empty", 0, false, ""},  // Ran 0 tests, OK: no_tests
	{"unittest", "nose2", 1, false, ""},
	{"unittest", "django", 1, false, ""}, // manage.py test
	{"cargo", "failures", 101, false, ""},
	{"cargo", "build", 101, false, ""},
	{"cargo", "old", 101, false, ""},              // Rust < 1.73 (Debian 12's), the message before the place
	{"cargo", "doctest", 101, false, "cargo/doc"}, // doc-tests: a panic in the library, a failed assert, one that does not compile
	{"jest", "mixed", 1, false, ""},
	{"vitest", "mixed", 1, false, ""},
	{"tap", "node", 1, false, ""},
	{"tap", "tap13", 1, false, ""},
	{"tap", "bail", 1, false, ""},
	{"tap", "skipped", 0, false, ""},
}

// TestParsers feeds captured output of the real runners (testdata/<fw>/
// <name>.out for stdout, .err for stderr, .report for the report file) to
// the parsers and compares with <name>.golden.json. @DIR@ in the captures
// stands for the project's directory. Run with -update to rewrite.
func TestParsers(t *testing.T) {
	for _, tt := range captures {
		t.Run(tt.fw+"/"+tt.name, func(t *testing.T) {
			res, dir := tt.parse(t, stdoutFirst)
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(golden{res.Outcome, res.Passed, res.Counts, res.Failures, res.BuildErrors, res.Summary}); err != nil {
				t.Fatal(err)
			}
			got := []byte(strings.ReplaceAll(buf.String(), dir, "@DIR@"))
			file := tt.base() + ".golden.json"
			if *update {
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if string(got) != string(want) {
				t.Errorf("result differs from %s (run with -update after checking):\n%s", file, got)
			}
			if len(res.Summary) > maxSummary {
				t.Errorf("summary is %d bytes, more than %d", len(res.Summary), maxSummary)
			}
		})
	}
}

// TestParsersReadEachStreamAlone: a runner's stdout and stderr are two
// pipes read as their lines come, so a line one printed may come between
// any two lines of the other (Django's system check inside unittest's
// failure block). What a parser makes of the run must not depend on it:
// only the tail of the output, in the summary, is in the order read.
func TestParsersReadEachStreamAlone(t *testing.T) {
	for _, tt := range captures {
		t.Run(tt.fw+"/"+tt.name, func(t *testing.T) {
			want, _ := tt.parse(t, stdoutFirst)
			out, err := tt.lines(t, ".out"), tt.lines(t, ".err")
			// the whole of one stream between any two lines of the other
			for k := 0; k <= len(err); k++ {
				got, _ := tt.parse(t, func(out, err []string, p parser) {
					each(err[:k], p.stderr)
					each(out, p.stdout)
					each(err[k:], p.stderr)
				})
				if g, w := brief(got), brief(want); g != w {
					t.Fatalf("stdout after stderr's line %d: the result differs from stdout first:\n%s\nwant\n%s", k, g, w)
				}
			}
			for k := 1; k < len(out); k++ {
				got, _ := tt.parse(t, func(out, err []string, p parser) {
					each(out[:k], p.stdout)
					each(err, p.stderr)
					each(out[k:], p.stdout)
				})
				if g, w := brief(got), brief(want); g != w {
					t.Fatalf("stderr after stdout's line %d: the result differs from stdout first:\n%s\nwant\n%s", k, g, w)
				}
			}
		})
	}
}

// interleave hands a capture's lines to a parser in some order, each
// stream's own lines in theirs.
type interleave func(out, err []string, p parser)

func stdoutFirst(out, err []string, p parser) {
	each(out, p.stdout)
	each(err, p.stderr)
}

func each(lines []string, fn func(string)) {
	for _, l := range lines {
		fn(l)
	}
}

// brief is a result less its summary, as text to compare.
func brief(r *Result) string {
	b, _ := json.MarshalIndent(golden{Outcome: r.Outcome, Passed: r.Passed, Counts: r.Counts, Failures: r.Failures, BuildErrors: r.BuildErrors}, "", "  ")
	return string(b)
}

func (tt capture) base() string { return filepath.Join("testdata", tt.fw, tt.name) }

// parse feeds the capture to its framework's parser, its two streams in
// the order mix gives, and returns the result and the project directory
// @DIR@ stands for.
func (tt capture) parse(t *testing.T, mix interleave) (*Result, string) {
	t.Helper()
	dir := tt.dirAbs(t)
	tmp := t.TempDir()
	if rep, err := os.ReadFile(tt.base() + ".report"); err == nil {
		name := map[string]string{"pytest": "junit.xml"}[tt.fw]
		if name == "" {
			name = "report.json"
		}
		rep = bytes.ReplaceAll(rep, []byte("@DIR@"), []byte(dir))
		if err := os.WriteFile(filepath.Join(tmp, name), rep, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fw := lookup(tt.fw)
	p := fw.parser(dir, tmp)
	out := &tailLines{n: 60}
	mix(tt.lines(t, ".out"), tt.lines(t, ".err"), teeParser{p, out})
	res := &Result{Framework: tt.fw, Command: tt.fw + " test", ExitCode: tt.exit, TimedOut: tt.killed,
		Output: strings.Join(out.lines(), "\n")}
	res.conclude(p.finish(tt.exit, tt.killed), fw, false, 0, 0)
	return res, dir
}

// lines reads one of the capture's files, @DIR@ in it the project's
// directory.
func (tt capture) lines(t *testing.T, ext string) []string {
	t.Helper()
	b, err := os.ReadFile(tt.base() + ext)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var lines []string
	feed(strings.ReplaceAll(string(b), "@DIR@", tt.dirAbs(t)), func(l string) { lines = append(lines, l) })
	return lines
}

// dirAbs is the project directory @DIR@ stands for.
func (tt capture) dirAbs(t *testing.T) string {
	t.Helper()
	sub := tt.dir
	if sub == "" {
		sub = tt.fw
	}
	dir, err := filepath.Abs(filepath.Join("testdata", sub))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// teeParser keeps the lines it is given, as the runner's tail does.
type teeParser struct {
	parser
	out *tailLines
}

func (p teeParser) stdout(l string) { p.out.add(l); p.parser.stdout(l) }
func (p teeParser) stderr(l string) { p.out.add(l); p.parser.stderr(l) }

func feed(text string, fn func(string)) {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fn(sc.Text())
	}
}

// FuzzParsers checks that no output, however broken, makes a parser panic
// or break the result's limits. The captures in testdata are the seeds.
func FuzzParsers(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/*.out")
	reports, _ := filepath.Glob("testdata/*/*.report")
	for _, p := range append(seeds, reports...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b), 1)
		}
	}
	f.Add("{\"Action\":\"output\",\"Package\":\"p\",\"Test\":\"T/a/b\",\"Output\":\"panic: test timed out after 1s\\n\"}\n\trunning tests:\n", 1)
	f.Fuzz(func(t *testing.T, text string, exit int) {
		if len(text) > 64<<10 {
			return // size is the live tests' business; this is about shape
		}
		dir := t.TempDir()
		for _, file := range []string{"junit.xml", "report.json"} {
			os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644)
		}
		for _, name := range Frameworks {
			fw := lookup(name)
			p := fw.parser(dir, dir)
			feed(text, p.stdout)
			feed(text, p.stderr)
			res := &Result{Framework: name, ExitCode: exit, Output: text}
			res.conclude(p.finish(exit, exit < 0), fw, false, 0, 0)
			if len(res.Summary) > maxSummary || res.Outcome == "" {
				t.Fatalf("%s: outcome %q, summary of %d bytes", name, res.Outcome, len(res.Summary))
			}
			for _, fl := range res.Failures {
				if n := strings.Count(fl.Excerpt, "\n") + 1; n > maxExcerptLines {
					t.Fatalf("%s: excerpt of %d lines", name, n)
				}
			}
		}
	})
}

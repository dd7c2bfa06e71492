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

// TestParsers feeds captured output of the real runners (testdata/<fw>/
// <name>.out for stdout, .err for stderr, .report for the report file) to
// the parsers and compares with <name>.golden.json. @DIR@ in the captures
// stands for the project's directory. Run with -update to rewrite.
func TestParsers(t *testing.T) {
	tests := []struct {
		fw, name string
		exit     int
		killed   bool
		dir      string // under testdata; default the framework's dir
	}{
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
	for _, tt := range tests {
		t.Run(tt.fw+"/"+tt.name, func(t *testing.T) {
			sub := tt.dir
			if sub == "" {
				sub = tt.fw
			}
			dir, err := filepath.Abs(filepath.Join("testdata", sub))
			if err != nil {
				t.Fatal(err)
			}
			base := filepath.Join("testdata", tt.fw, tt.name)
			read := func(ext string) string {
				b, err := os.ReadFile(base + ext)
				if err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				return strings.ReplaceAll(string(b), "@DIR@", dir)
			}
			tmp := t.TempDir()
			if rep := read(".report"); rep != "" {
				name := map[string]string{"pytest": "junit.xml"}[tt.fw]
				if name == "" {
					name = "report.json"
				}
				if err := os.WriteFile(filepath.Join(tmp, name), []byte(rep), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			fw := lookup(tt.fw)
			p := fw.parser(dir, tmp)
			out := &tailLines{n: 60}
			feed(read(".out"), func(l string) { out.add(l); p.stdout(l) })
			feed(read(".err"), func(l string) { out.add(l); p.stderr(l) })
			res := &Result{Framework: tt.fw, Command: tt.fw + " test", ExitCode: tt.exit, TimedOut: tt.killed,
				Output: strings.Join(out.lines(), "\n")}
			res.conclude(p.finish(tt.exit, tt.killed), fw, false, 0, 0)
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(golden{res.Outcome, res.Passed, res.Counts, res.Failures, res.BuildErrors, res.Summary}); err != nil {
				t.Fatal(err)
			}
			got := []byte(strings.ReplaceAll(buf.String(), dir, "@DIR@"))
			file := base + ".golden.json"
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

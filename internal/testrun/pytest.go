package testrun

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

var pytestFramework = &framework{
	name:    "pytest",
	command: pytestCommand,
	prepare: func(cmd, tmp string, env []string) (string, []string) {
		// PYTEST_ADDOPTS reaches pytest however it is started (tox, make,
		// a script); xunit1 puts file and line on each test case.
		opts := strings.TrimSpace(getEnv(env, "PYTEST_ADDOPTS") + " --junitxml=" + filepath.Join(tmp, "junit.xml") + " -o junit_family=xunit1")
		return cmd, setEnv(env, "PYTEST_ADDOPTS", opts)
	},
	parser: func(dir, tmp string) parser {
		return &pytestParser{dir: dir, xml: filepath.Join(tmp, "junit.xml"), text: newUnittestParser(dir)}
	},
}

// pytestCommand prefers the project's virtualenv, then a python3 that can
// import pytest (python3 -m pytest puts the project on sys.path), then a
// pytest script on PATH.
func pytestCommand(dir string) (string, string) {
	for _, venv := range []string{".venv", "venv"} {
		py := filepath.Join(venv, "bin", "python")
		if fi, err := os.Stat(filepath.Join(dir, py)); err == nil && !fi.IsDir() {
			return py + " -m pytest", ""
		}
	}
	if hasBinary("python3") {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if exec.CommandContext(ctx, "python3", "-c", "import pytest").Run() == nil {
			return "python3 -m pytest", ""
		}
	}
	for _, bin := range []string{"pytest", "pytest-3"} {
		if hasBinary(bin) {
			return bin, ""
		}
	}
	return "", missingText("pytest")
}

type pytestParser struct {
	dir, xml string
	out      tailLines
	// A Python project detected as pytest's may run its tests with
	// unittest (make test, a script): no JUnit report then, but unittest's
	// text.
	text *unittestParser
}

func (p *pytestParser) stdout(l string) { p.out.add(l); p.text.stdout(l) }
func (p *pytestParser) stderr(l string) { p.out.add(l); p.text.stderr(l) }

func (p *pytestParser) finish(exitCode int, killed bool) *report {
	if _, err := os.Stat(p.xml); err != nil && p.text.ran {
		return p.text.finish(exitCode, killed)
	}
	rep := &report{}
	if cases, err := readJunit(p.xml); err == nil {
		rep.structured = true
		for _, c := range cases {
			pytestCase(rep, c, p.dir)
		}
	}
	switch exitCode {
	case 2:
		if !rep.collection && !killed {
			rep.toolError = "pytest was interrupted: " + p.lastError()
		}
	case 3:
		rep.toolError = "pytest internal error: " + p.lastError()
	case 4:
		rep.toolError = "pytest usage error: " + p.lastError()
	case 5:
		rep.structured = true // no tests collected
	}
	return rep
}

// lastError picks pytest's own error line from the output's end.
func (p *pytestParser) lastError() string {
	ls := p.out.lines()
	for i := len(ls) - 1; i >= 0; i-- {
		l := strings.TrimSpace(ls[i])
		if strings.HasPrefix(l, "ERROR") || strings.HasPrefix(l, "E ") || strings.Contains(l, "error:") || strings.Contains(l, "Error:") {
			return clip(l, maxLineLen)
		}
	}
	for i := len(ls) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(ls[i]); l != "" && !strings.HasPrefix(l, "===") {
			return clip(l, maxLineLen)
		}
	}
	return "no output"
}

var (
	pyExcLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^E\s+(.+)$`) })
)

// pyLocation reads "tests/test_calc.py:5: AssertionError", which ends a
// failure's text, or "tests/test_bad.py:1: in <module>", a traceback
// entry: the file, its line, what follows. Which colon ends the name is
// settled as place.go says; exists looks in the run's directory.
func pyLocation(l string, exists func(string) bool) (file string, line int, what string, ok bool) {
	l = strings.TrimRight(l, " \t\r")
	if l == "" || l[0] == ' ' || l[0] == '\t' || l[0] == '>' || strings.HasPrefix(l, "E ") {
		return "", 0, "", false // pytest prints them at the margin, unlike source and exception lines
	}
	var cands []place
	for _, c := range places(l, ".py") {
		if c.rest == ":" || strings.HasPrefix(c.rest, ": ") {
			c.rest = strings.TrimPrefix(strings.TrimPrefix(c.rest, ":"), " ")
			cands = append(cands, c)
		}
	}
	at, ok := pickPlace(cands, exists)
	return at.file, at.line, at.rest, ok
}

func pytestCase(rep *report, c junitCase, dir string) {
	c.File = filepath.ToSlash(c.File)
	id := c.Name
	if c.File != "" {
		module := strings.ReplaceAll(strings.TrimSuffix(c.File, ".py"), "/", ".")
		if class, ok := strings.CutPrefix(c.Classname, module+"."); ok {
			id = class + "::" + id
		}
		id = c.File + "::" + id
	} else if c.Classname != "" {
		id = c.Classname + "::" + id
	}
	switch {
	case len(c.Errors) > 0:
		e := c.Errors[0]
		rep.counts.Errors++
		f := pytestFailure(dir, id, c, e, KindError)
		if e.Message == "collection failure" || c.Classname == "" {
			rep.collection = true
			f.ID = c.File
			if f.ID == "" {
				f.ID = strings.ReplaceAll(c.Name, ".", "/") + ".py"
			}
		} else {
			rep.counts.Total++
		}
		rep.fail(f)
	case len(c.Failures) > 0:
		rep.counts.Failed++
		rep.counts.Total++
		rep.fail(pytestFailure(dir, id, c, c.Failures[0], KindFail))
	case c.Skipped != nil:
		rep.counts.Skipped++
		rep.counts.Total++
	default:
		rep.counts.Passed++
		rep.counts.Total++
	}
}

func pytestFailure(dir, id string, c junitCase, m junitMessage, kind string) Failure {
	f := Failure{ID: id, Kind: kind, File: c.File}
	text := strings.Split(strings.TrimRight(m.Text, "\n"), "\n")
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	inside := func(file string) bool {
		return !filepath.IsAbs(file) && !strings.HasPrefix(file, "<") || strings.HasPrefix(file, abs+"/")
	}
	rel := func(file string) string {
		if r, err := filepath.Rel(abs, file); err == nil && filepath.IsAbs(file) && !strings.HasPrefix(r, "..") {
			return filepath.ToSlash(r)
		}
		return file
	}
	// The traceback entry in the test's own file is where to look for a
	// failed test; the innermost entry in the project is where a module
	// that did not load went wrong (an import of a module with a syntax
	// error fails at the test file's import line, which is no help).
	var lastFile, innerFile, exc string
	var ownLine, lastLine, innerLine int
	exists := existsIn(abs)
	for _, l := range text {
		file, line, what, ok := pyLocation(l, exists)
		if !ok {
			continue
		}
		lastFile, lastLine = file, line
		if inside(file) {
			innerFile, innerLine = rel(file), line
		}
		if file == c.File {
			ownLine = line
		}
		if !strings.HasPrefix(what, "in ") {
			exc = what
		}
	}
	// The exception: the last block of "E" lines, at its outermost
	// indentation. A SyntaxError shows its own frame first, indented
	// deeper: `E     File "/p/calc.py", line 2`, the code, a caret, then
	// `E   SyntaxError: invalid syntax`; that frame is the innermost place.
	var block []string
	prevE := false
	for _, l := range text {
		em := pyExcLine().FindStringSubmatch(l)
		if em == nil {
			prevE = false
			continue
		}
		if !prevE {
			block = block[:0]
		}
		prevE = true
		block = append(block, l)
	}
	minInd := -1
	for _, l := range block {
		body := strings.TrimPrefix(l, "E")
		if strings.TrimSpace(body) == "" {
			continue
		}
		if fm := pyFrame().FindStringSubmatch(body); fm != nil {
			if inside(fm[1]) {
				innerFile, innerLine = rel(fm[1]), atoi(fm[2])
			}
			continue
		}
		if ind := indentOf(body); minInd < 0 || ind < minInd {
			minInd, f.Message = ind, clip(strings.TrimSpace(body), maxLineLen)
		}
	}
	// An exception other than a failed assert ended the test.
	if kind == KindFail && exc != "" && exc != "AssertionError" && exc != "Failed" {
		f.Kind = KindPanic
	}
	switch {
	case kind == KindError && innerFile != "":
		f.File, f.Line = innerFile, innerLine
	case ownLine != 0:
		f.Line = ownLine
	case lastFile != "":
		f.File, f.Line = lastFile, lastLine
	case c.Line != "":
		f.Line = atoi(c.Line) + 1 // xunit1's line is 0-based, at the def
	}
	if f.Message == "" {
		f.Message = firstLine(m.Message)
	}
	if f.Message == "" {
		f.Message = firstLine(m.Text)
	}
	// pytest's and importlib's own entries say nothing about the project.
	skip := false
	f.Excerpt = excerpt(text, func(l string) bool {
		if l != "" && l[0] != ' ' && l[0] != 'E' {
			file, _, _, ok := pyLocation(l, exists)
			skip = ok && !inside(file) || strings.HasPrefix(l, "<frozen ")
			return skip
		}
		return skip && strings.HasPrefix(l, " ")
	})
	return f
}

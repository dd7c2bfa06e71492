package testrun

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// unittestFramework reads the text Python's unittest prints (python -m
// unittest, and the runners built on its TextTestRunner: nose2, Django's
// manage.py test). It writes no report file: the failure blocks, the "Ran
// N tests" line and the verdict after it are the report.
var unittestFramework = &framework{
	name:    "unittest",
	command: unittestCommand,
	prepare: func(cmd, _ string, env []string) (string, []string) { return cmd, env },
	parser: func(dir, _ string) parser {
		return newUnittestParser(dir)
	},
}

// unittestCommand prefers the project's virtualenv, then python3.
func unittestCommand(dir string) (string, string) {
	for _, venv := range []string{".venv", "venv"} {
		py := filepath.Join(venv, "bin", "python")
		if fi, err := os.Stat(filepath.Join(dir, py)); err == nil && !fi.IsDir() {
			return py + " -m unittest", ""
		}
	}
	if hasBinary("python3") {
		return "python3 -m unittest", ""
	}
	return "", missingText("python3")
}

var (
	// "FAIL: test_add (test_calc.TestCalc.test_add)", then the test's
	// description (its docstring's first line) when it has one.
	utHeader = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(FAIL|ERROR|UNEXPECTED SUCCESS): (.+)$`)
	})
	utRan = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Ran (\d+) tests? in `) })
	// "OK", "OK (skipped=1)", "FAILED (failures=1, errors=2)", "NO TESTS RAN"
	utVerdict = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(OK|FAILED|NO TESTS RAN)(?: \((.*)\))?\s*$`)
	})
	// `  File "/p/test_calc.py", line 11, in test_add`; a SyntaxError's
	// frame has no function.
	pyFrame = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*File "(.+?)", line (\d+)(?:, in (.+))?$`) })
)

const (
	utSep1 = "======================================================================"
	utSep2 = "----------------------------------------------------------------------"
)

type unittestParser struct {
	dir string // absolute
	rep report
	// The report is on stderr, but a runner built on unittest may print
	// to stdout while it runs (Django's system check), and the two pipes
	// are read as they come: each stream's lines are read as text of
	// their own, so a line of one never lands inside a block of the other.
	out, err utStream
	ran      bool // a "Ran N tests" line was seen
	last     string
	usage    string // argparse's "prog: error: ..." (unittest, nose2, Django)
	// from the summary lines, over every run the command made
	sumRun, sumFailures, sumErrors, sumSkipped, sumXfail, sumUnexpected int
	blocks                                                              []utBlock
}

// utStream is where one output stream stands in a failure block.
type utStream struct {
	block   []string // the failure block being read, header first
	inBlock bool
	dash    bool // a utSep2 line inside a block, kept until the next line says what it was
}

// utBlock is one failure block, read.
type utBlock struct {
	f          Failure
	test       string // the test without its subtest part, to count it once
	collection bool
	fixture    bool
}

func newUnittestParser(dir string) *unittestParser {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return &unittestParser{dir: abs}
}

func (p *unittestParser) stdout(l string) { p.line(&p.out, l) }
func (p *unittestParser) stderr(l string) { p.line(&p.err, l) }

func (p *unittestParser) line(s *utStream, l string) {
	l = strings.TrimRight(stripANSI(l), "\r")
	if s.dash {
		s.dash = false
		if utRan().MatchString(l) {
			p.endBlock(s)
		} else if s.inBlock {
			s.block = append(s.block, utSep2)
		}
	}
	switch {
	case l == utSep1:
		p.endBlock(s)
		s.inBlock = true
		return
	case l == utSep2:
		s.dash = true
		return
	}
	if s.inBlock {
		if len(s.block) < keptLines {
			s.block = append(s.block, l)
		}
		return
	}
	if m := utRan().FindStringSubmatch(l); m != nil {
		p.ran = true
		p.rep.structured = true
		p.sumRun += atoi(m[1])
		p.last = ""
		return
	}
	if m := utVerdict().FindStringSubmatch(l); m != nil && p.ran {
		for _, kv := range strings.Split(m[2], ",") {
			k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
			n := atoi(v)
			switch k {
			case "failures":
				p.sumFailures += n
			case "errors":
				p.sumErrors += n
			case "skipped":
				p.sumSkipped += n
			case "expected failures":
				p.sumXfail += n
			case "unexpected successes":
				p.sumUnexpected += n
			}
		}
		return
	}
	if strings.Contains(l, ": error: ") && p.usage == "" {
		p.usage = clip(strings.TrimSpace(l), maxLineLen)
	}
	if name, qual, ok := utStarted(l); ok {
		p.last = name + " (" + qual + ")"
	} else if strings.HasSuffix(l, " ok") || strings.HasSuffix(l, " FAIL") || strings.HasSuffix(l, " ERROR") ||
		strings.Contains(l, " ... ") {
		p.last = ""
	}
}

// utTestName splits "test_add (test_calc.TestCalc.test_add)" (Python ≥
// 3.11) or "test_add (test_calc.TestCalc)", then a subtest's "[msg]
// (i=1)". The module is named after its file, which may hold any
// character ("a:b (x)_test.py" run by path), so in the first form the
// name's own repetition ends it.
func utTestName(desc string) (name, qual, rest string, ok bool) {
	name, after, found := strings.Cut(desc, " (")
	if !found || name == "" {
		return "", "", "", false
	}
	if i := strings.Index(after, "."+name+")"); i > 0 {
		end := i + 1 + len(name)
		return name, after[:end], after[end+1:], true
	}
	i := strings.IndexByte(after, ')')
	if strings.ContainsAny(name, " \t") || i <= 0 || strings.ContainsAny(after[:i], " \t(") {
		return "", "", "", false
	}
	return name, after[:i], after[i+1:], true
}

// utStarted reads "test_hang (test_h.T.test_hang) ... " of -v, a test
// still waiting for its verdict.
func utStarted(l string) (name, qual string, ok bool) {
	i := strings.LastIndex(l, " ...")
	if i < 0 || strings.TrimSpace(l[i+len(" ..."):]) != "" {
		return "", "", false
	}
	name, qual, _, ok = utTestName(l[:i])
	return name, qual, ok
}

// endBlock reads the failure block gathered since the last separator.
func (p *unittestParser) endBlock(s *utStream) {
	if !s.inBlock {
		return
	}
	s.inBlock = false
	lines := s.block
	s.block = nil
	if len(lines) == 0 {
		return
	}
	m := utHeader().FindStringSubmatch(lines[0])
	if m == nil {
		return // a line of 70 "=" the suite printed itself
	}
	// The test's description (its docstring's first line) may stand
	// between the header and the dash line; the traceback follows it.
	body := lines[1:]
	for i, l := range body {
		if l == utSep2 {
			body = body[i+1:]
			break
		}
	}
	p.blocks = append(p.blocks, p.readBlock(m[1], m[2], body))
}

func (p *unittestParser) readBlock(what, desc string, body []string) utBlock {
	b := utBlock{f: Failure{ID: desc, Kind: KindFail}}
	test := desc
	module := ""
	if name, qual, rest, ok := utTestName(desc); ok {
		rest = strings.TrimSpace(rest)
		id := qual
		if !strings.HasSuffix(qual, "."+name) {
			id = qual + "." + name
		}
		test = id
		switch {
		case strings.Contains(qual, "_FailedTest") || strings.Contains(qual, "ModuleImportFailure") ||
			strings.Contains(qual, "LoadTestsFailure"):
			// unittest's and nose2's stand-in for a module that did not import
			b.collection = true
			id = strings.ReplaceAll(name, ".", "/") + ".py"
		case name == "setUpClass" || name == "tearDownClass" || name == "setUpModule" || name == "tearDownModule":
			b.fixture = true
			id = qual + "." + name
		default:
			module = qual[:max(strings.LastIndexByte(strings.TrimSuffix(qual, "."+name), '.'), 0)]
		}
		if rest != "" {
			id += " " + rest
		}
		b.f.ID = id
	}
	b.test = test
	exc, frames := pyTraceback(body)
	switch {
	case b.collection || b.fixture:
		b.f.Kind = KindError
	case what == "ERROR":
		b.f.Kind = KindPanic
	}
	// Where: for a test, the last frame in its own module's file (the
	// line of the test that failed); for a module that did not load, the
	// innermost frame in the project (the syntax error, the bad import).
	modFile := strings.ReplaceAll(module, ".", "/") + ".py"
	var own, inner *pyFrameAt
	for i := range frames {
		fr := &frames[i]
		if !p.inside(fr.file) {
			continue
		}
		inner = fr
		if module != "" && (fr.file == modFile || strings.HasSuffix(fr.file, "/"+modFile)) {
			own = fr
		}
	}
	switch {
	case own != nil && !b.collection:
		b.f.File, b.f.Line = p.rel(own.file), own.line
	case inner != nil:
		b.f.File, b.f.Line = p.rel(inner.file), inner.line
	}
	b.f.Message = clip(exc, maxLineLen)
	if what == "UNEXPECTED SUCCESS" {
		b.f.Message = "unexpected success: the test is marked expectedFailure but passed"
	}
	b.f.Excerpt = excerpt(p.trimTrace(body), nil)
	if b.f.Message == "" {
		b.f.Message = firstLine(b.f.Excerpt)
	}
	if b.f.Message == "" {
		b.f.Message = strings.ToLower(what)
	}
	return b
}

type pyFrameAt struct {
	file string
	line int
}

// pyTraceback finds, in a Python traceback, the exception that ended it
// (the last one of a chain) and its frames, outermost first. A
// SyntaxError's frame has no function and is followed by the source line
// and a caret.
func pyTraceback(body []string) (string, []pyFrameAt) {
	start := 0
	for i, l := range body {
		if strings.HasPrefix(l, "Traceback (most recent call last):") {
			start = i
		}
	}
	var frames []pyFrameAt
	exc := ""
	for _, l := range body[start:] {
		if m := pyFrame().FindStringSubmatch(l); m != nil {
			frames = append(frames, pyFrameAt{m[1], atoi(m[2])})
			continue
		}
		if exc == "" && l != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") &&
			!strings.HasPrefix(l, "Traceback (most recent call last):") {
			exc = strings.TrimSpace(l)
		}
	}
	if exc == "" && start == 0 && len(frames) == 0 {
		exc = firstLine(strings.Join(body, "\n"))
	}
	return exc, frames
}

// trimTrace drops a traceback's frames outside the project (Python's own
// library, site-packages, the runner) and the caret lines under code.
func (p *unittestParser) trimTrace(in []string) []string {
	out := make([]string, 0, len(in))
	skip, syntax := false, false
	for _, l := range in {
		if m := pyFrame().FindStringSubmatch(l); m != nil {
			skip = !p.inside(m[1])
			syntax = m[3] == "" // a SyntaxError's caret says where on the line
			if !skip {
				out = append(out, strings.Replace(l, m[1], p.rel(m[1]), 1))
			}
			continue
		}
		if skip && strings.HasPrefix(l, "    ") {
			continue
		}
		skip = false
		if t := strings.TrimSpace(l); t != "" && strings.Trim(t, "^~") == "" && !syntax {
			continue
		}
		out = append(out, l)
	}
	return out
}

// inside says whether a traceback's file is the project's own.
func (p *unittestParser) inside(file string) bool {
	if strings.Contains(file, "site-packages") || strings.Contains(file, "dist-packages") || strings.HasPrefix(file, "<") {
		return false
	}
	if !filepath.IsAbs(file) {
		return true
	}
	return strings.HasPrefix(file, p.dir+string(filepath.Separator))
}

func (p *unittestParser) rel(file string) string {
	if r, err := filepath.Rel(p.dir, file); err == nil && filepath.IsAbs(file) && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return filepath.ToSlash(file)
}

func (p *unittestParser) finish(exitCode int, killed bool) *report {
	for _, s := range []*utStream{&p.out, &p.err} {
		s.dash = false
		p.endBlock(s)
	}
	c := &p.rep.counts
	failedTests := map[string]bool{}
	collection, fixtures := 0, 0
	for _, b := range p.blocks {
		switch {
		case b.collection:
			collection++
			p.rep.collection = true
			c.Errors++
		case b.fixture:
			fixtures++
			c.Errors++
		default:
			c.Failed++
			failedTests[b.test] = true
		}
		p.rep.fail(b.f)
	}
	// The summary's numbers stand where blocks were not read (a run of
	// several suites, output cut short).
	failed := len(failedTests) // a test with failed subtests fails once
	if n := p.sumFailures + p.sumErrors + p.sumUnexpected - collection - fixtures; n > c.Failed {
		failed += n - c.Failed
		c.Failed = n
	}
	c.Skipped = p.sumSkipped + p.sumXfail
	c.Passed = max(0, p.sumRun-failed-c.Skipped-collection)
	if killed && p.last != "" {
		c.Failed++
		p.rep.fail(Failure{ID: p.last, Kind: KindTimeout, Message: "still running when the run timed out"})
	}
	c.Total = c.Passed + c.Failed + c.Skipped
	if !p.ran && exitCode == 2 && p.usage != "" {
		p.rep.toolError = p.usage // argparse's exit status for bad usage
	}
	return &p.rep
}

package testrun

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

var goFramework = &framework{
	name: "go",
	command: func(dir string) (string, string) {
		if !hasBinary("go") {
			return "", missingText("go")
		}
		return "go test ./...", ""
	},
	prepare: func(cmd, _ string, env []string) (string, []string) {
		return goAddJSON(cmd), env
	},
	parser: func(dir, _ string) parser { return newGoParser(dir) },
}

var (
	goTestCmd  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^|[\s;&|(])go\s+test(?:$|[\s;&|)])`) })
	goJSONFlag = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\s-{1,2}json(?:=true)?(?:$|\s)`) })
)

// goAddJSON inserts -json right after `go test`, unless it is there.
func goAddJSON(cmd string) string {
	loc := goTestCmd().FindStringIndex(cmd)
	if loc == nil || goJSONFlag().MatchString(cmd[loc[0]:]) {
		return cmd
	}
	end := loc[0] + strings.Index(cmd[loc[0]:], "test") + len("test")
	return cmd[:end] + " -json" + cmd[end:]
}

// goEvent is one line of test2json (go doc test2json).
type goEvent struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string // build-output, build-fail (Go ≥ 1.24)
	FailedBuild string
}

var (
	// what follows "calc.go:3" in a compiler's "calc.go:3:9: undefined: x",
	// also without the column (vet, older go)
	goCompileRest = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?::(\d+))?: (.+)$`) })
	// what follows "calc_test.go:25" in a goroutine trace's frame
	goFrameRest = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?: \+0x[0-9a-f]+)?$`) })
	// "\t\tTestHang (1s)" under "running tests:" after a -timeout panic
	goRunningTest = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\t\t(\S+) \(`) })
	goResultLine  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s*)--- (FAIL|PASS|SKIP): (\S+)`) })
	goPkgLine     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:ok|FAIL|\?)\s+(\S+)`) })
)

type goParser struct {
	dir      *goResolver
	rep      report
	pkgs     map[string]*goPkg
	order    []*goPkg
	build    map[string]*lines // build-output by ImportPath
	buildBad []string          // ImportPaths whose build failed, in order
	stderrL  lines
	text     tailLines // the end of the output as go test would print it
	events   bool      // test2json events were seen
	plain    goPlain
}

type goPkg struct {
	path       string
	tests      map[string]*goTest
	order      []*goTest
	out        lines
	done       bool
	timedOut   bool // "panic: test timed out after"
	timeoutMsg string
	inRunning  bool // reading the "running tests:" list
	running    map[string]bool
	panicMsg   string // a panic outside any test
	noTests    bool
}

type goTest struct {
	name       string
	ran        bool // had events; a subtest named "a/b" makes a parent "a" that has none
	parent     *goTest
	children   int
	openKids   int // subtests without a verdict yet
	failedKids int
	state      string // "" while running; pass, fail, skip
	out        lines
	logFile    string // first "file.go:N: msg" line
	logLine    int
	logMsg     string
	logInd     int      // the log line's indentation
	logCont    []string // the lines under it: an assertion library's report
	logDone    bool
	panicMsg   string
	frame      string // first stack frame inside the module, once a panic began
	frameLn    int
}

func newGoParser(dir string) *goParser {
	return &goParser{dir: newGoResolver(dir), pkgs: map[string]*goPkg{}, build: map[string]*lines{}}
}

func (p *goParser) stdout(line string) {
	var ev goEvent
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &ev) != nil || ev.Action == "" {
		p.text.add(line)
		p.plain.line(p, line)
		return
	}
	p.events = true
	if ev.Output != "" {
		p.text.add(strings.TrimSuffix(ev.Output, "\n"))
	}
	switch ev.Action {
	case "build-output":
		b := p.build[ev.ImportPath]
		if b == nil {
			b = &lines{}
			p.build[ev.ImportPath] = b
		}
		b.add(strings.TrimSuffix(ev.Output, "\n"))
		return
	case "build-fail":
		p.buildBad = append(p.buildBad, ev.ImportPath)
		return
	}
	if ev.Package == "" {
		return
	}
	pkg := p.pkg(ev.Package)
	if ev.Test == "" {
		p.pkgEvent(pkg, ev)
		return
	}
	t := pkg.test(ev.Test)
	t.ran = true
	switch ev.Action {
	case "output":
		for _, l := range strings.Split(strings.TrimSuffix(ev.Output, "\n"), "\n") {
			p.testOutput(pkg, t, l)
		}
	case "pass", "skip":
		t.verdict(ev.Action)
		t.out = lines{} // a passing test's output is of no use to a fix
		if t.children == 0 {
			if ev.Action == "pass" {
				p.rep.counts.Passed++
			} else {
				p.rep.counts.Skipped++
			}
			p.rep.counts.Total++
		}
	case "fail":
		t.verdict("fail")
		p.testFailed(pkg, t, KindFail, false)
	}
}

func (p *goParser) pkg(path string) *goPkg {
	pkg := p.pkgs[path]
	if pkg == nil {
		pkg = &goPkg{path: path, tests: map[string]*goTest{}, running: map[string]bool{}}
		p.pkgs[path] = pkg
		p.order = append(p.order, pkg)
	}
	return pkg
}

func (pkg *goPkg) test(name string) *goTest {
	t := pkg.tests[name]
	if t == nil {
		t = &goTest{name: name}
		if i := strings.LastIndexByte(name, '/'); i > 0 {
			t.parent = pkg.test(name[:i])
			t.parent.children++
			t.parent.openKids++
		}
		pkg.tests[name] = t
		pkg.order = append(pkg.order, t)
	}
	return t
}

func (p *goParser) pkgEvent(pkg *goPkg, ev goEvent) {
	switch ev.Action {
	case "output":
		l := strings.TrimSuffix(ev.Output, "\n")
		pkg.out.add(l)
		p.scanPanic(pkg, nil, l)
		if strings.HasSuffix(l, "[no test files]") {
			pkg.noTests = true
		}
		if strings.HasSuffix(l, "[setup failed]") {
			p.rep.buildFailed = true
			p.setupFailed(pkg)
		}
	case "fail", "pass", "skip":
		pkg.done = true
		if ev.FailedBuild != "" {
			p.rep.buildFailed = true
		}
		if ev.Action == "fail" {
			p.unfinished(pkg, false)
		}
	}
}

// scanPanic follows a panic in a test's or a package's output: its message,
// and after a -timeout panic the list of tests that were running.
func (p *goParser) scanPanic(pkg *goPkg, t *goTest, l string) {
	switch {
	case strings.HasPrefix(l, "panic: test timed out after"):
		pkg.timedOut = true
		pkg.timeoutMsg = strings.TrimPrefix(l, "panic: ")
		p.rep.ownTimeout = true
	case strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: "):
		msg := strings.TrimSuffix(strings.TrimSuffix(l, " [recovered, repanicked]"), " [recovered]")
		if t != nil && t.panicMsg == "" {
			t.panicMsg = msg
		} else if t == nil && pkg.panicMsg == "" {
			pkg.panicMsg = msg
		}
	case pkg.timedOut && strings.TrimSpace(l) == "running tests:":
		pkg.inRunning = true
	case pkg.inRunning:
		if m := goRunningTest().FindStringSubmatch(l); m != nil {
			pkg.running[m[1]] = true
		} else {
			pkg.inRunning = false
		}
	}
}

func (p *goParser) testOutput(pkg *goPkg, t *goTest, l string) {
	t.out.add(l)
	p.scanPanic(pkg, t, l)
	switch {
	case t.logFile == "" && t.panicMsg == "":
		if file, line, msg, ok := goLog(l, p.dir.pkgExists(pkg.path)); ok {
			t.logFile, t.logLine, t.logMsg, t.logInd = file, line, msg, indentOf(l)
		}
	case t.logFile != "" && !t.logDone:
		t.logCont, t.logDone = continuation(t.logCont, l, t.logInd)
	}
	if t.frame == "" && (t.panicMsg != "" || pkg.timedOut) {
		if file, line, ok := goFrameAt(l); ok && p.dir.inside(file) {
			t.frame, t.frameLn = file, line
		}
	}
}

// testFailed records a failed test. A test whose subtests failed is only
// their frame; it is reported when it failed on its own account (or, with
// force, when it never finished).
func (p *goParser) testFailed(pkg *goPkg, t *goTest, kind string, force bool) {
	own := force || t.panicMsg != "" || t.logFile != ""
	if t.children > 0 && (t.failedKids > 0 || !own) {
		return
	}
	p.rep.counts.Failed++
	p.rep.counts.Total++
	f := Failure{ID: pkg.path + "." + t.name, Kind: kind}
	switch {
	case kind == KindTimeout:
		f.Message = "still running when the run timed out"
		if pkg.timeoutMsg != "" {
			f.Message = pkg.timeoutMsg
		}
		f.File, f.Line = p.dir.rel(t.frame), t.frameLn
	case force && t.panicMsg == "":
		f.Message = "did not finish: the test binary exited"
	case t.panicMsg != "":
		f.Kind, f.Message = KindPanic, t.panicMsg
		f.File, f.Line = p.dir.rel(t.frame), t.frameLn
	case t.logFile != "":
		f.File, f.Line = p.dir.file(pkg.path, t.logFile), t.logLine
		msg, file, line := assertMessage(t.logMsg, t.logCont)
		f.Message = clip(msg, maxLineLen)
		if file != "" && p.dir.inside(file) {
			f.File, f.Line = p.dir.rel(file), line
		}
	}
	if f.File == "" && t.logFile != "" {
		f.File, f.Line = p.dir.file(pkg.path, t.logFile), t.logLine
	}
	ex := p.dir.trimStack(t.out.all())
	f.Excerpt = excerpt(ex, goFraming)
	if f.Message == "" {
		f.Message = firstLine(f.Excerpt)
	}
	if f.Message == "" {
		f.Message = "failed"
	}
	p.rep.fail(f)
	t.out = lines{}
}

// unfinished reports the tests of pkg that never got a verdict: the ones
// a timeout or a crash cut short. A test whose subtests are still open is
// left to them.
func (p *goParser) unfinished(pkg *goPkg, killed bool) {
	for _, t := range pkg.order {
		if t.state != "" || !t.ran || t.failedKids > 0 || t.openKids > 0 {
			continue
		}
		t.verdict("fail")
		kind := KindFail
		switch {
		case killed || pkg.timedOut:
			kind = KindTimeout
		case pkg.panicMsg != "" && t.panicMsg == "":
			t.panicMsg = pkg.panicMsg
		}
		p.testFailed(pkg, t, kind, true)
	}
}

// verdict records how t ended, for its parent too. A repeated event (a
// test binary run twice by -count) does not count twice.
func (t *goTest) verdict(state string) {
	if t.state != "" {
		t.state = state
		return
	}
	t.state = state
	if t.parent != nil {
		t.parent.openKids--
		if state == "fail" {
			t.parent.failedKids++
		}
	}
}

func (p *goParser) setupFailed(pkg *goPkg) {
	for _, l := range pkg.out.all() {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "FAIL") {
			p.rep.buildError(BuildError{Message: clip(pkg.path+": "+l, maxLineLen)})
			return
		}
	}
}

func (p *goParser) stderr(line string) {
	p.stderrL.add(line)
	p.text.add(line)
}

// tail is the end of the output in go test's own words, not JSON.
func (p *goParser) tail() []string { return p.text.lines() }

func (p *goParser) finish(exitCode int, killed bool) *report {
	for _, pkg := range p.order {
		if !pkg.done {
			p.unfinished(pkg, killed)
		}
	}
	p.plain.finish(p)
	for _, ip := range p.buildBad {
		p.compileErrors(ip, p.build[ip].all())
	}
	// Older go, vet and go's own errors write plain text to stderr.
	if exitCode != 0 {
		p.compileErrors("", p.stderrL.all())
	}
	hasPkgs := false
	for _, pkg := range p.order {
		if !pkg.noTests {
			hasPkgs = true
		}
	}
	p.rep.structured = p.events || p.plain.seen
	if exitCode != 0 && !hasPkgs && len(p.rep.buildErrors) == 0 && p.rep.counts.Total == 0 && !killed {
		// go itself failed: no go.mod, a bad flag, no packages.
		var msgs []string
		for _, l := range p.stderrL.all() {
			if l = strings.TrimSpace(l); l != "" {
				msgs = append(msgs, l)
			}
		}
		if len(msgs) > 0 {
			p.rep.toolError = clip(strings.Join(msgs[:min(len(msgs), 3)], "; "), maxLineLen)
		}
	}
	return &p.rep
}

// compileErrors turns compiler or vet output into build errors; a failed
// build with no line in that form still gets its first message.
func (p *goParser) compileErrors(importPath string, out []string) {
	found := false
	for _, l := range out {
		var cands []place
		for _, c := range places(strings.TrimSpace(l), ".go") {
			if goCompileRest().MatchString(c.rest) {
				cands = append(cands, c)
			}
		}
		at, ok := pickPlace(cands, existsIn(p.dir.dir))
		if !ok {
			continue
		}
		m := goCompileRest().FindStringSubmatch(at.rest)
		found = true
		p.rep.buildError(BuildError{File: p.dir.rel(at.file), Line: at.line, Col: atoi(m[1]), Message: clip(m[2], maxLineLen)})
	}
	if found || importPath == "" {
		return
	}
	for _, l := range out {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			p.rep.buildError(BuildError{Message: clip(strings.Fields(importPath)[0]+": "+l, maxLineLen)})
			return
		}
	}
}

// goFraming tells go test's own lines from a test's output.
func goFraming(l string) bool {
	t := strings.TrimSpace(l)
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- FAIL:", "--- PASS:", "--- SKIP:"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// goLog reads t.Error's line, "    calc_test.go:12: got 3": indented, the
// file's base name, its line, the message. Which colon ends the name is
// settled as place.go says; exists, when not nil, looks in the package.
func goLog(l string, exists func(string) bool) (file string, line int, msg string, ok bool) {
	t := strings.TrimLeft(l, " \t")
	if len(t) == len(l) {
		return "", 0, "", false
	}
	var cands []place
	for _, c := range places(t, ".go") {
		if strings.HasPrefix(c.rest, ":") {
			c.rest = strings.TrimPrefix(c.rest[1:], " ")
			cands = append(cands, c)
		}
	}
	at, ok := pickPlace(cands, exists)
	return at.file, at.line, at.rest, ok
}

// goFrameAt reads a goroutine trace's frame, "\t/home/u/p/calc_test.go:25
// +0x28": a path (absolute unless built with -trimpath), its line, maybe
// an offset.
func goFrameAt(l string) (string, int, bool) {
	t, ok := strings.CutPrefix(l, "\t")
	if !ok {
		return "", 0, false
	}
	var cands []place
	for _, c := range places(t, ".go") {
		if goFrameRest().MatchString(c.rest) {
			cands = append(cands, c)
		}
	}
	at, ok := pickPlace(cands, existsIn(""))
	return at.file, at.line, ok
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// goPlain reads `go test` output without -json (a Makefile target, a
// script): verdict lines, their indented output, a panic's trace, and the
// package lines that name the package of the failures before them.
type goPlain struct {
	seen    bool
	cur     *Failure // a failure whose output is being read
	indent  int
	logInd  int      // the indentation of the failure's first log line
	logCont []string // the lines under it
	logDone bool
	panic   bool // reading a panic's trace, up to the package line
	buf     lines
	pending []int // failures waiting for their package's name
}

func (g *goPlain) line(p *goParser, l string) {
	if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
		if g.cur == nil {
			g.cur = &Failure{ID: "(package)"}
		}
		g.cur.Kind = KindPanic
		g.cur.Message = clip(strings.TrimSuffix(strings.TrimSuffix(l, " [recovered, repanicked]"), " [recovered]"), maxLineLen)
		g.panic = true
		g.buf.add(l)
		return
	}
	var pkgLine []string
	if strings.HasPrefix(l, "ok") || strings.HasPrefix(l, "FAIL") || strings.HasPrefix(l, "?") { // regexps cost, on 200 MB
		pkgLine = goPkgLine().FindStringSubmatch(l)
	}
	if g.cur != nil {
		switch ind := indentOf(l); {
		case g.panic && pkgLine == nil:
			g.buf.add(l)
			if g.cur.File == "" {
				if file, line, ok := goFrameAt(l); ok && p.dir.inside(file) {
					g.cur.File, g.cur.Line = p.dir.rel(file), line
				}
			}
			return
		case !g.panic && ind > g.indent && strings.TrimSpace(l) != "":
			g.buf.add(l)
			if g.cur.File == "" {
				// the package, and so the directory, is named only later
				if file, line, msg, ok := goLog(l, nil); ok {
					g.cur.File, g.cur.Line, g.cur.Message = file, line, msg
					g.logInd = indentOf(l)
				}
			} else if !g.logDone {
				g.logCont, g.logDone = continuation(g.logCont, l, g.logInd)
			}
			return
		}
		g.close(p)
	}
	if strings.Contains(l, "--- ") { // the regexp only where it can match: this runs per line
		if m := goResultLine().FindStringSubmatch(l); m != nil {
			g.verdict(p, m)
			return
		}
	}
	if pkgLine != nil {
		g.seen = true
		for _, i := range g.pending {
			f := &p.rep.failures[i]
			if !strings.Contains(f.File, "/") {
				f.File = p.dir.file(pkgLine[1], f.File)
			}
			f.ID = pkgLine[1] + "." + f.ID
		}
		g.pending = g.pending[:0]
		if strings.Contains(l, "[build failed]") || strings.Contains(l, "[setup failed]") {
			p.rep.buildFailed = true
		}
		return
	}
	p.stderrL.add(l) // compiler errors, when go test's output is merged
}

// verdict counts a "--- PASS/FAIL/SKIP: Name" line; a failure's output
// follows it, indented.
func (g *goPlain) verdict(p *goParser, m []string) {
	g.seen = true
	c := &p.rep.counts
	c.Total++
	switch m[2] {
	case "PASS":
		c.Passed++
	case "SKIP":
		c.Skipped++
	case "FAIL":
		c.Failed++
		g.cur = &Failure{ID: m[3], Kind: KindFail}
		g.indent = len(m[1])
	}
}

func (g *goPlain) close(p *goParser) {
	f := *g.cur
	if f.File != "" && f.Kind != KindPanic {
		msg, file, line := assertMessage(f.Message, g.logCont)
		f.Message = clip(msg, maxLineLen)
		if file != "" && p.dir.inside(file) {
			f.File, f.Line = p.dir.rel(file), line
		}
	}
	g.logCont, g.logDone = nil, false
	f.Excerpt = excerpt(p.dir.trimStack(g.buf.all()), nil)
	if f.Message == "" {
		f.Message = firstLine(f.Excerpt)
	}
	if f.Message == "" {
		f.Message = "failed"
	}
	if n := len(p.rep.failures); n < maxFailures {
		g.pending = append(g.pending, n)
	}
	p.rep.fail(f)
	g.cur, g.buf, g.panic = nil, lines{}, false
}

func (g *goPlain) finish(p *goParser) {
	if g.cur != nil {
		g.close(p)
	}
}

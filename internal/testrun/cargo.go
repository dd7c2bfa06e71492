package testrun

import (
	"regexp"
	"strings"
	"sync"
)

var cargoFramework = &framework{
	name: "cargo",
	command: func(string) (string, string) {
		if !hasBinary("cargo") {
			return "", missingText("cargo")
		}
		return "cargo test", ""
	},
	prepare: func(cmd, _ string, env []string) (string, []string) { return cargoRewrite(cmd), env },
	rewrite: cargoRewrite,
	parser:  func(dir, _ string) parser { return &cargoParser{dir: dir, sections: map[string]*lines{}} },
}

var cargoTestCmd = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[\s;&|(/])cargo\s+(?:\+\S+\s+)?test(?:$|[\s;&|)])`)
})

// cargoRewrite adds --no-fail-fast: without it cargo stops at the first
// failing test binary, and the integration tests' and doc-tests' failures
// would stay unknown.
func cargoRewrite(cmd string) string {
	if !strings.Contains(cmd, "--no-fail-fast") {
		if out, ok := insertAfterCargoTest(cmd); ok {
			return out
		}
	}
	return cmd
}

func insertAfterCargoTest(cmd string) (string, bool) {
	loc := cargoTestCmd().FindStringIndex(cmd)
	if loc == nil {
		return cmd, false
	}
	end := loc[0] + strings.Index(cmd[loc[0]:], "test") + len("test")
	return cmd[:end] + " --no-fail-fast" + cmd[end:], true
}

var (
	cargoRunning  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^running \d+ tests?$`) })
	cargoTestLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^test (.+?) \.\.\. (ok|FAILED|ignored\b.*|bench:.*)$`)
	})
	cargoTestStart = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^test (.+?) \.\.\. ?$`) })
	cargoLongTest  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^test (.+) has been running for over \d+ seconds$`) })
	cargoSection   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^---- (.+) (?:stdout|stderr) ----$`) })
	cargoPanic     = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^thread '(.*?)'(?: \(\d+\))? panicked at (.+?):(\d+):(\d+):$`)
	})
	cargoPanicOld = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^thread '(.*?)'(?: \(\d+\))? panicked at '(.*)', (.+?):(\d+):(\d+)$`)
	})
	// Rust < 1.73 with a message of several lines: the place ends the last
	cargoPanicOpen  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^thread '(.*?)'(?: \(\d+\))? panicked at '(.*)$`) })
	cargoPanicEnd   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`', (.+?):(\d+):(\d+)$`) })
	cargoDiag       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(error|warning)(?:\[(\w+)\])?: (.+)$`) })
	cargoArrow      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*--> (.+?):(\d+):(\d+)$`) })
	cargoFrame      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s+\d+: `) })
	cargoFrameAt    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s+at (.+):\d+(?::\d+)?$`) })
	cargoNotCompile = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`test failed, to rerun|doctest failed|targets? failed|build failed, waiting|aborting due to`)
	})
)

type cargoParser struct {
	dir      string // the run's; a doc-test's file is read from it
	rep      report
	failed   []string // failed tests, in order
	running  map[string]bool
	sections map[string]*lines
	cur      *lines // the "---- name stdout ----" section being read
	diag     *BuildError
	compile  bool     // the current diagnostic is a compiler error
	misc     []string // errors without a place: a dependency, the linker
}

// stdout reads libtest's report. Each regexp is tried only on lines that
// start as it needs: a test may print 200 MB.
func (p *cargoParser) stdout(l string) {
	switch {
	case strings.HasPrefix(l, "running ") && cargoRunning().MatchString(l):
		p.rep.structured = true
		p.cur = nil
		return
	case strings.HasPrefix(l, "---- "):
		if m := cargoSection().FindStringSubmatch(l); m != nil {
			if p.sections[m[1]] == nil {
				p.sections[m[1]] = &lines{}
			}
			p.cur = p.sections[m[1]]
			return
		}
	case l == "failures:" || strings.HasPrefix(l, "test result: "):
		p.cur = nil
		return
	}
	if p.cur != nil {
		p.cur.add(l)
		return
	}
	if !strings.HasPrefix(l, "test ") {
		return
	}
	if m := cargoTestLine().FindStringSubmatch(l); m != nil {
		delete(p.running, m[1])
		c := &p.rep.counts
		c.Total++
		switch {
		case m[2] == "ok" || strings.HasPrefix(m[2], "bench:"):
			c.Passed++
		case m[2] == "FAILED":
			c.Failed++
			p.failed = append(p.failed, m[1])
		default:
			c.Skipped++
		}
		return
	}
	for _, re := range []*regexp.Regexp{cargoTestStart(), cargoLongTest()} {
		if m := re.FindStringSubmatch(l); m != nil {
			p.started(m[1])
		}
	}
}

// stderr reads cargo's and rustc's diagnostics: `error[E0425]: msg` then
// `--> src/lib.rs:7:13`. Warnings are read only to know where an error ends.
func (p *cargoParser) stderr(l string) {
	if !strings.HasPrefix(l, "error") && !strings.HasPrefix(l, "warning") && !strings.HasPrefix(l, "test ") && p.diag == nil {
		return
	}
	if m := cargoDiag().FindStringSubmatch(l); m != nil {
		p.endDiag()
		if m[1] != "error" {
			return
		}
		msg := m[3]
		switch {
		case strings.HasPrefix(msg, "could not compile"):
			p.rep.buildFailed = true
		case cargoNotCompile().MatchString(msg):
		default:
			p.diag = &BuildError{Message: clip(msg, maxLineLen)}
			p.compile = m[2] != ""
		}
		return
	}
	if p.diag != nil && p.diag.File == "" {
		if m := cargoArrow().FindStringSubmatch(l); m != nil {
			p.diag.File, p.diag.Line, p.diag.Col = m[1], atoi(m[2]), atoi(m[3])
			p.compile = true
		}
	}
	if strings.HasPrefix(l, "test ") {
		if m := cargoLongTest().FindStringSubmatch(l); m != nil {
			p.started(m[1])
		}
	}
}

// started notes a test that began and has no verdict yet: with one test
// thread, or a test slow enough for libtest to say so.
func (p *cargoParser) started(name string) {
	if p.running == nil {
		p.running = map[string]bool{}
	}
	p.running[name] = true
}

func (p *cargoParser) endDiag() {
	if p.diag == nil {
		return
	}
	if p.compile {
		p.rep.buildError(*p.diag)
	} else if len(p.misc) < 5 {
		p.misc = append(p.misc, p.diag.Message)
	}
	p.diag, p.compile = nil, false
}

func (p *cargoParser) finish(exitCode int, killed bool) *report {
	p.endDiag()
	for _, name := range p.failed {
		f := cargoFailure(name, p.sections[name])
		docTestPlace(p.dir, name, &f, p.sections[name])
		p.rep.fail(f)
	}
	if killed {
		for name := range p.running {
			p.rep.counts.Failed++
			p.rep.counts.Total++
			p.rep.fail(Failure{ID: name, Kind: KindTimeout, Message: "still running when the run timed out"})
		}
	}
	if len(p.misc) > 0 {
		switch {
		case p.rep.buildFailed && len(p.rep.buildErrors) == 0:
			for _, m := range p.misc {
				p.rep.buildError(BuildError{Message: m})
			}
		case !p.rep.buildFailed && p.rep.counts.Total == 0 && exitCode != 0:
			p.rep.toolError = p.misc[0]
		}
	}
	return &p.rep
}

func cargoFailure(name string, sec *lines) Failure {
	f := Failure{ID: name, Kind: KindFail}
	if sec == nil {
		f.Message = "failed"
		return f
	}
	all := sec.all()
	for i, l := range all {
		if m := cargoPanic().FindStringSubmatch(l); m != nil {
			f.File, f.Line = m[2], atoi(m[3])
			for _, next := range all[i+1:] {
				if next = strings.TrimSpace(next); next != "" {
					f.Message = clip(next, maxLineLen)
					break
				}
			}
			break
		}
		if m := cargoPanicOld().FindStringSubmatch(l); m != nil {
			f.File, f.Line, f.Message = m[3], atoi(m[4]), clip(m[2], maxLineLen)
			break
		}
		if m := cargoPanicOpen().FindStringSubmatch(l); m != nil {
			f.Message = clip(m[2], maxLineLen)
			for _, next := range all[i+1:] {
				if e := cargoPanicEnd().FindStringSubmatch(next); e != nil {
					f.File, f.Line = e[1], atoi(e[2])
					break
				}
			}
			break
		}
	}
	if f.Message != "" && !strings.HasPrefix(f.Message, "assertion") {
		f.Kind = KindPanic
	}
	f.Excerpt = excerpt(cargoTrimTrace(all), func(l string) bool {
		return strings.HasPrefix(l, "note: run with `RUST_BACKTRACE")
	})
	if f.Message == "" {
		f.Message = firstLine(f.Excerpt)
	}
	return f
}

// cargoTrimTrace keeps, of a backtrace, only the frames in the project
// (relative paths), not the standard library's or dependencies'.
func cargoTrimTrace(in []string) []string {
	var out []string
	inTrace, header := false, ""
	for i := 0; i < len(in); i++ {
		l := in[i]
		switch {
		case strings.TrimSpace(l) == "stack backtrace:":
			inTrace, header = true, l // written with the first frame kept
		case inTrace && cargoFrame().MatchString(l):
			if i+1 < len(in) {
				if m := cargoFrameAt().FindStringSubmatch(in[i+1]); m != nil {
					if !strings.HasPrefix(m[1], "/") {
						if header != "" {
							out, header = append(out, header), ""
						}
						out = append(out, l, in[i+1])
					}
					i++
				}
			}
		case inTrace && strings.HasPrefix(strings.TrimSpace(l), "note: Some details are omitted"):
			inTrace = false
		default:
			inTrace = false
			out = append(out, l)
		}
	}
	return out
}

package testrun

import (
	"regexp"
	"strings"
	"sync"
)

// genericFramework knows nothing of the runner: the exit code decides and
// the end of the output is the summary. It still reads the closing
// summary lines common runners print ("Ran 0 tests", "no tests ran",
// "test result: ok. 0 passed", "0 examples, 0 failures"), so a command
// that ran no test is no_tests as under every other framework, not a pass.
var genericFramework = &framework{
	name: "generic",
	command: func(dir string) (string, string) {
		return "", "no test framework recognised in " + dir + ": give the step a command"
	},
	prepare: func(cmd, _ string, env []string) (string, []string) { return cmd, env },
	parser:  func(string, string) parser { return &genericParser{} },
}

// genericParser sums the summary lines it recognises. zero is a runner
// saying it found or ran no test; some is one saying tests ran, their
// count unknown (go test's "ok pkg" lines, a Maven total).
type genericParser struct {
	seen       bool // a summary with counts
	zero, some bool
	counts     Counts
	// after unittest's "Ran N tests", waiting for its verdict on the
	// same stream: a line the other stream printed meanwhile is not it
	out, err utWait
}

type utWait struct {
	ran  int
	open bool
}

var (
	genUnittestRan = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Ran (\d+) tests? (?:in|across) `) })
	// pytest's last line, with -q too: "=== 1 failed, 2 passed in 0.1s ===", "no tests ran in 0.01s"
	genPytest = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^=*\s*((?:\d+ \w+(?:, )?)+|no tests ran) in [\d.]+s(?: \([^)]*\))?\s*=*$`)
	})
	genLibtest = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored;`)
	})
	genJest   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Tests:\s+(.*\d+ total)`) })
	genVitest = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\s*Tests\s+(\d+ \w+(?: \| \d+ \w+)*) \((\d+)\)\s*$`)
	})
	// node --test, tap-parser: "# tests 3", "# pass 2", "# fail 1", "# skipped 0"
	genTAPCount = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^# (tests|pass|fail|skip|skipped|todo) (\d+)$`) })
	genMocha    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s+(\d+) (passing|failing|pending)\b`) })
	// rspec "3 examples, 1 failure, 1 pending"; ExUnit "1 doctest, 3 tests, 1 failure"
	genExamples = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?:(\d+) doctests?, )?(\d+) (?:examples?|tests?), (\d+) failures?(?:, (\d+) (?:pending|skipped|excluded))?`)
	})
	genDotnet = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:Passed|Failed)!\s+- Failed:\s+(\d+), Passed:\s+(\d+), Skipped:\s+(\d+), Total:\s+(\d+)`)
	})
	genCtest = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`tests passed, (\d+) tests? failed out of (\d+)`) })
	genMaven = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`Tests run: (\d+), Failures: \d+, Errors: \d+, Skipped: \d+`)
	})
	// the runners' own "nothing to run"
	genNothing = []string{"No tests found", "No test files found", "NO TESTS RAN", "No tests executed!",
		"No tests were found!!!", "No test is available in", "[no test files]", "[no tests to run]", "collected 0 items"}
)

func (g *genericParser) stdout(l string) { g.line(&g.out, l) }
func (g *genericParser) stderr(l string) { g.line(&g.err, l) }

// line is called for every line of output, 200 MB of it perhaps: the
// regexps run only on lines that can match them.
func (g *genericParser) line(w *utWait, l string) {
	if len(l) > 300 {
		return
	}
	if w.open {
		if t := strings.TrimSpace(l); t != "" {
			g.unittestVerdict(w, t)
		}
		return
	}
	for _, s := range genNothing {
		if strings.Contains(l, s) {
			g.zero = true
			return
		}
	}
	t := strings.TrimSpace(l)
	switch {
	case strings.HasPrefix(t, "Ran "):
		if m := genUnittestRan().FindStringSubmatch(t); m != nil {
			w.ran, w.open = atoi(m[1]), true
			if strings.Contains(t, " across ") { // bun: no verdict line follows
				g.add(Counts{Total: w.ran, Passed: w.ran})
				w.open = false
			}
		}
	case strings.HasPrefix(t, "test result: "):
		if m := genLibtest().FindStringSubmatch(t); m != nil {
			g.add(Counts{Passed: atoi(m[1]), Failed: atoi(m[2]), Skipped: atoi(m[3])})
		}
	case strings.HasPrefix(t, "Tests:"):
		if m := genJest().FindStringSubmatch(t); m != nil {
			g.add(parts(m[1], ","))
		}
	case strings.HasPrefix(t, "Tests "):
		if m := genVitest().FindStringSubmatch(l); m != nil {
			g.add(parts(m[1], "|"))
		}
	case strings.HasPrefix(t, "# "):
		if m := genTAPCount().FindStringSubmatch(t); m != nil {
			n := atoi(m[2])
			switch m[1] {
			case "tests":
				g.seen = true
				g.zero = g.zero || n == 0
			case "pass":
				g.counts.Passed += n
			case "fail":
				g.counts.Failed += n
			default:
				g.counts.Skipped += n
			}
		}
	case t == "1..0" || strings.HasPrefix(t, "1..0 "):
		g.zero = true
	case strings.HasPrefix(t, "ok ") || strings.HasPrefix(t, "ok\t") || strings.HasPrefix(t, "FAIL\t"):
		if strings.Contains(t, "\t") { // go test's package lines
			g.some = true
		}
	case strings.Contains(t, "passing") || strings.Contains(t, "failing") || strings.Contains(t, "pending"):
		if m := genMocha().FindStringSubmatch(l); m != nil {
			n := atoi(m[1])
			switch m[2] {
			case "passing":
				g.add(Counts{Passed: n})
			case "failing":
				g.add(Counts{Failed: n})
			default:
				g.add(Counts{Skipped: n})
			}
		}
	}
	switch {
	case strings.Contains(t, " in ") && (strings.Contains(t, "passed") || strings.Contains(t, "failed") || strings.Contains(t, "no tests ran") ||
		strings.Contains(t, "error") || strings.Contains(t, "skipped")):
		if m := genPytest().FindStringSubmatch(t); m != nil {
			if m[1] == "no tests ran" {
				g.zero = true
			} else {
				g.add(parts(m[1], ","))
			}
		}
	case strings.Contains(t, " failure"):
		if m := genExamples().FindStringSubmatch(t); m != nil {
			total, failed := atoi(m[1])+atoi(m[2]), atoi(m[3])
			skipped := atoi(m[4])
			g.add(Counts{Passed: max(0, total-failed-skipped), Failed: failed, Skipped: skipped})
		}
	case strings.Contains(t, "Total:"):
		if m := genDotnet().FindStringSubmatch(t); m != nil {
			g.add(Counts{Failed: atoi(m[1]), Passed: atoi(m[2]), Skipped: atoi(m[3])})
		}
	case strings.Contains(t, "tests passed, "):
		if m := genCtest().FindStringSubmatch(t); m != nil {
			failed, total := atoi(m[1]), atoi(m[2])
			g.add(Counts{Failed: failed, Passed: total - failed})
		}
	case strings.Contains(t, "Tests run: "):
		if m := genMaven().FindStringSubmatch(t); m != nil {
			// printed per class and in total: only whether any ran
			g.zero = g.zero || atoi(m[1]) == 0
			g.some = g.some || atoi(m[1]) > 0
		}
	}
}

// unittestVerdict reads the line after "Ran N tests": OK, FAILED (…) or
// NO TESTS RAN, with its counts.
func (g *genericParser) unittestVerdict(w *utWait, t string) {
	w.open = false
	m := utVerdict().FindStringSubmatch(t)
	if m == nil {
		g.add(Counts{Passed: w.ran})
		return
	}
	var c Counts
	for _, kv := range strings.Split(m[2], ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		switch k {
		case "failures", "errors", "unexpected successes":
			c.Failed += atoi(v)
		case "skipped", "expected failures":
			c.Skipped += atoi(v)
		}
	}
	c.Passed = max(0, w.ran-c.Failed-c.Skipped)
	g.add(c)
}

// parts reads "1 failed, 2 passed, 3 total" (sep ",") or "1 failed | 2
// passed" (sep "|").
func parts(s, sep string) Counts {
	var c Counts
	for _, p := range strings.Split(s, sep) {
		f := strings.Fields(p)
		if len(f) < 2 {
			continue
		}
		n := atoi(f[0])
		switch f[1] {
		case "passed", "xpassed":
			c.Passed += n
		case "failed", "error", "errors":
			c.Failed += n
		case "skipped", "xfailed", "todo", "pending":
			c.Skipped += n
		}
	}
	return c
}

func (g *genericParser) add(c Counts) {
	g.seen = true
	g.counts.Passed += c.Passed
	g.counts.Failed += c.Failed
	g.counts.Skipped += c.Skipped
}

func (g *genericParser) finish(exitCode int, _ bool) *report {
	for _, w := range []*utWait{&g.out, &g.err} {
		if w.open {
			g.unittestVerdict(w, "")
		}
	}
	rep := &report{}
	c := g.counts
	c.Total = c.Passed + c.Failed + c.Skipped
	switch {
	case (g.zero || g.seen) && !g.some && c.Passed == 0 && c.Failed == 0:
		// A runner said it ran nothing, or skipped all: no_tests, as
		// under every framework, whatever the exit code.
		rep.structured = true
		rep.counts = c
	case g.seen && (exitCode != 0 || c.Failed == 0):
		// The counts, for the summary; the exit code still decides (a
		// suite's failures the command chose to ignore stay ignored).
		rep.counts = c
	}
	return rep
}

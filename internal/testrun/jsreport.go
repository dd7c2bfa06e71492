package testrun

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

var jestFramework = &framework{
	name:    "jest",
	command: func(dir string) (string, string) { return nodeCommand(dir, "jest", "") },
	prepare: func(cmd, tmp string, env []string) (string, []string) {
		flags := "--json --outputFile=" + shellQuote(filepath.Join(tmp, "report.json"))
		if out, ok := insertAfter(cmd, "jest", flags); ok {
			return out, env
		}
		return appendToTestScript(cmd, flags), env
	},
	parser: func(dir, tmp string) parser { return newJSParser(dir, filepath.Join(tmp, "report.json")) },
}

var vitestFramework = &framework{
	name:    "vitest",
	command: func(dir string) (string, string) { return nodeCommand(dir, "vitest", " run") },
	prepare: func(cmd, tmp string, env []string) (string, []string) {
		// Both reporters: the JSON one for us, the default one for the log
		// and for a run cut short before the JSON was written.
		flags := "--reporter=default --reporter=json --outputFile.json=" + shellQuote(filepath.Join(tmp, "report.json"))
		cmd = vitestRun(cmd)
		if i := wordAt(cmd, "vitest"); i >= 0 {
			i += strings.Index(cmd[i:], "run") + len("run")
			return cmd[:i] + " " + flags + cmd[i:], env
		}
		return appendToTestScript(cmd, flags), env
	},
	rewrite: vitestRun,
	parser:  func(dir, tmp string) parser { return newJSParser(dir, filepath.Join(tmp, "report.json")) },
}

// vitestRun makes `vitest` run once: `vitest` alone and `vitest watch`
// (or dev) would wait for changes forever.
func vitestRun(cmd string) string {
	i := wordAt(cmd, "vitest")
	if i < 0 {
		return cmd
	}
	rest := strings.TrimLeft(cmd[i:], " \t")
	switch {
	case rest == "run" || strings.HasPrefix(rest, "run ") || strings.HasPrefix(rest, "run\t"):
		return cmd
	case strings.HasPrefix(rest, "watch") || strings.HasPrefix(rest, "dev"):
		j := i + strings.Index(cmd[i:], rest[:1])
		word := strings.Fields(rest)[0]
		return cmd[:j] + "run" + cmd[j+len(word):]
	}
	return cmd[:i] + " run" + cmd[i:]
}

// nodeCommand runs the project's own copy of a runner. `npx --no` never
// downloads one: a runner missing from node_modules is an error that says
// how to install it, not a silent network fetch.
func nodeCommand(dir, bin, args string) (string, string) {
	if findUp(dir, filepath.Join("node_modules", ".bin", bin)) != "" {
		if !hasBinary("npx") {
			return "", missingText("npx")
		}
		return "npx --no -- " + bin + args, ""
	}
	if hasBinary(bin) {
		return bin + args, ""
	}
	return "", missingText(bin)
}

var testScript = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*(npm|pnpm|yarn)(\s+run)?\s+test\b`) })

// appendToTestScript passes flags through `npm test` and the like to the
// runner the test script starts.
func appendToTestScript(cmd, flags string) string {
	m := testScript().FindStringSubmatch(cmd)
	switch {
	case m == nil:
		return cmd
	case m[1] == "npm" && !strings.Contains(cmd, " -- "):
		return cmd + " -- " + flags
	}
	return cmd + " " + flags
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// jsReport is the JSON report of jest (--json) and of vitest's json
// reporter, which copies jest's shape.
type jsReport struct {
	TestResults []struct {
		Name             string
		Status           string
		Message          string
		AssertionResults []struct {
			AncestorTitles  []string
			Title           string
			Status          string
			FailureMessages []string
			Location        *struct{ Line int }
		}
	}
}

type jsParser struct {
	dir, file string
	abs       string
	noTests   bool
}

func newJSParser(dir, file string) *jsParser {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return &jsParser{dir: dir, file: file, abs: abs}
}

// jest writes no report when no test file matched; vitest says it too.
var jsNoTests = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^No tests found, exiting with code|^No test files found, exiting with code`)
})

func (p *jsParser) stdout(l string) { p.noTests = p.noTests || jsNoTests().MatchString(l) }
func (p *jsParser) stderr(l string) { p.stdout(l) }

var (
	// what ends a stack frame: ":4:23)" or ":4:23"; a TAP location's
	// column may be missing
	jsFrameEnd      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`:(\d+):(\d+)\)?\s*$`) })
	jsFrameEndLoose = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`:(\d+)(?::\d+)?\)?\s*$`) })
	jsTimeout       = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`Exceeded timeout of \d+ ?ms|Test timed out in \d+ ?ms`)
	})
	jsThrown = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?:Uncaught )?(TypeError|ReferenceError|RangeError|SyntaxError|EvalError|URIError)\b`)
	})
)

// jsFrame reads a stack frame's place: "at Object.toBe (/abs/sum.test.js:4:23)",
// "at /abs/sum.test.js:5:23", "at file:///abs/x.mjs:3:1", "❯ sum.test.js:5:23".
// The name may hold spaces and parentheses, so where it starts is
// settled as place.go says: the longest reading that names an existing
// file (exists, when not nil), else the shortest with neither. A file://
// URL is returned as a path. loose reads a TAP location too: a place
// alone ("/p/x.js:10:5"), its column optional.
func jsFrame(t string, exists func(string) bool, loose bool) (file string, line int, ok bool) {
	end := jsFrameEnd()
	if loose {
		end = jsFrameEndLoose()
	}
	loc := end.FindStringSubmatchIndex(t)
	if loc == nil {
		return "", 0, false
	}
	head := t[:loc[0]]
	line = atoi(t[loc[2]:loc[3]])
	var starts []int
	if loose {
		starts = append(starts, 0)
	}
	for i := 0; i < len(head); i++ {
		switch {
		case head[i] == '(':
			starts = append(starts, i+1)
		case strings.HasPrefix(head[i:], "at ") && (i == 0 || head[i-1] == ' '):
			starts = append(starts, i+len("at "))
		case strings.HasPrefix(head[i:], "❯ ") && (i == 0 || head[i-1] == ' '):
			starts = append(starts, i+len("❯ "))
		}
	}
	if exists != nil {
		for _, st := range starts {
			if f := head[st:]; f != "" && exists(f) {
				return fileURLPath(f), line, true
			}
		}
	}
	for i := len(starts) - 1; i >= 0; i-- {
		if f := head[starts[i]:]; f != "" && !strings.ContainsAny(f, " \t()") {
			return fileURLPath(f), line, true
		}
	}
	return "", 0, false
}

func (p *jsParser) finish(int, bool) *report {
	rep := &report{structured: p.noTests}
	b, err := os.ReadFile(p.file)
	if err != nil {
		return rep
	}
	var r jsReport
	if json.Unmarshal(b, &r) != nil {
		return rep
	}
	rep.structured = true
	for _, file := range r.TestResults {
		rel := p.rel(file.Name)
		if len(file.AssertionResults) == 0 && file.Status == "failed" {
			// the file did not load: a syntax error, a missing import
			rep.collection = true
			rep.counts.Errors++
			f := p.failure(rel, file.Name, file.Message, KindError)
			f.ID = rel
			rep.fail(f)
			continue
		}
		for _, a := range file.AssertionResults {
			c := &rep.counts
			c.Total++
			switch a.Status {
			case "passed":
				c.Passed++
			case "failed":
				c.Failed++
				f := p.failure(rel, file.Name, strings.Join(a.FailureMessages, "\n"), KindFail)
				f.ID = strings.Join(append(append([]string{rel}, a.AncestorTitles...), a.Title), " > ")
				if f.Line == 0 && a.Location != nil {
					f.Line = a.Location.Line
				}
				rep.fail(f)
			default: // pending, skipped, todo, disabled
				c.Skipped++
			}
		}
	}
	return rep
}

// failure reads a jest or vitest failure message: the first line says
// what, a stack frame in the test file says where.
func (p *jsParser) failure(rel, abs, msg, kind string) Failure {
	msg = stripANSI(msg)
	f := Failure{File: rel, Kind: kind}
	if f.Line == 0 && kind == KindError {
		// vitest names the place of a load error only in its message
		for _, l := range strings.Split(msg, "\n") {
			if file, line, ok := jsFrame(strings.TrimSpace(l), existsIn(p.abs), false); ok && filepath.Clean(file) == filepath.Clean(abs) {
				f.Line = line
				break
			}
		}
	}
	ls := strings.Split(msg, "\n")
	var keep []string
	for _, l := range ls {
		t := strings.TrimSpace(l)
		if t == "● Test suite failed to run" {
			continue
		}
		if name, line, ok := jsFrame(t, existsIn(p.abs), false); ok && (strings.HasPrefix(t, "at ") || strings.HasPrefix(t, "❯ ")) {
			file := name
			if !filepath.IsAbs(file) {
				file = filepath.Join(p.abs, file)
			}
			if f.Line == 0 && (file == abs || filepath.Clean(file) == filepath.Clean(abs)) {
				f.Line = line
			}
			if strings.Contains(file, "node_modules") || strings.HasPrefix(name, "node:") || !strings.HasPrefix(file, p.abs) {
				continue // the runner's own frames
			}
		} else if strings.HasPrefix(t, "at ") {
			continue // "at new Promise (<anonymous>)"
		}
		keep = append(keep, relText(p.abs, l))
	}
	f.Excerpt = excerpt(keep, nil)
	f.Message = firstLine(f.Excerpt)
	switch {
	case jsTimeout().MatchString(msg):
		f.Kind = KindTimeout
	case kind == KindFail && jsThrown().MatchString(f.Message):
		f.Kind = KindPanic
	}
	return f
}

func (p *jsParser) rel(name string) string {
	if r, err := filepath.Rel(p.abs, name); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return name
}

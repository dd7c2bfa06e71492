//go:build unix

package testrun

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/testutil/testtool"
)

// The tests in this file run the real runners on small projects written
// into t.TempDir(). A runner that is not installed skips its test, naming
// the package that would enable it; under CI=true, where .ci/install
// provides them all, it fails the test instead (cargo excepted).

// project writes files (path → content) under a new temporary directory.
func project(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// run runs a suite with the PIDS variable naming a file the tests append
// their process ids to, so a test can check nothing survived a timeout.
func run(t *testing.T, o Options) (*Result, string) {
	t.Helper()
	pids := filepath.Join(t.TempDir(), "pids")
	o.Env = append(os.Environ(), "PIDS="+pids)
	start := time.Now()
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("%s %q: outcome %s in %v; summary:\n%s", res.Framework, res.Command, res.Outcome, time.Since(start).Round(time.Millisecond), res.Summary)
	if !res.TimedOut {
		slowMu.Lock()
		slowest[res.Framework] = max(slowest[res.Framework], time.Since(start))
		slowMu.Unlock()
	}
	return res, pids
}

var (
	slowMu  sync.Mutex
	slowest = map[string]time.Duration{} // the longest run so far, by framework
)

// hangTimeout is the timeout for a framework's hanging test: base, or
// more on a machine where the earlier runs were slow (a cold cache, a
// busy CI runner), so the test is sure to be hanging when it fires.
func hangTimeout(framework string, base time.Duration) time.Duration {
	slowMu.Lock()
	defer slowMu.Unlock()
	return min(max(base, 2*slowest[framework]+2*time.Second), time.Minute)
}

// expect is what a test checks of a result.
type expect struct {
	outcome string
	counts  *Counts
	file    string // of the first failure (or build error)
	line    int
	kind    string // of the first failure
	message string // contained in the first failure's (or build error's) message
}

func check(t *testing.T, res *Result, want expect) {
	t.Helper()
	if res.Outcome != want.outcome {
		t.Fatalf("outcome %q, want %q\n%s\noutput:\n%s", res.Outcome, want.outcome, res.Summary, res.Output)
	}
	if res.Passed != (want.outcome == Passed) {
		t.Errorf("passed = %v with outcome %s", res.Passed, res.Outcome)
	}
	if want.counts != nil && res.Counts != *want.counts {
		t.Errorf("counts %+v, want %+v", res.Counts, *want.counts)
	}
	if len(res.Summary) > maxSummary || res.Summary == "" {
		t.Errorf("summary of %d bytes", len(res.Summary))
	}
	if want.file == "" && want.message == "" {
		return
	}
	var file, message, kind string
	var line int
	switch {
	case len(res.Failures) > 0:
		f := res.Failures[0]
		file, line, message, kind = f.File, f.Line, f.Message, f.Kind
	case len(res.BuildErrors) > 0:
		e := res.BuildErrors[0]
		file, line, message = e.File, e.Line, e.Message
	default:
		t.Fatalf("no failure nor build error; want %s:%d", want.file, want.line)
	}
	if file != want.file || (want.line > 0 && line != want.line) {
		t.Errorf("failure at %s:%d, want %s:%d", file, line, want.file, want.line)
	}
	if !strings.Contains(message, want.message) {
		t.Errorf("message %q does not contain %q", message, want.message)
	}
	if want.kind != "" && kind != want.kind {
		t.Errorf("kind %q, want %q", kind, want.kind)
	}
}

// checkHung checks a suite stopped by the timeout: outcome timeout, ended
// within the timeout plus the grace period, and none of the processes the
// tests wrote to the pid file is still running.
func checkHung(t *testing.T, res *Result, pidFile string, timeout, grace time.Duration) {
	t.Helper()
	if res.Outcome != Timeout || !res.TimedOut || res.Passed {
		t.Errorf("outcome %s, timed_out %v, passed %v; want a timeout", res.Outcome, res.TimedOut, res.Passed)
	}
	if d := time.Duration(res.DurationMS) * time.Millisecond; d > timeout+grace+2*time.Second {
		t.Errorf("took %v, more than the timeout %v plus the grace %v", d, timeout, grace)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the hanging test did not start before the timeout (%v); output:\n%s", err, res.Output)
	}
	pids := strings.Fields(string(b))
	if len(pids) == 0 {
		t.Fatal("no pid written")
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		if pid > 0 && running(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("process %d of the suite survived the timeout", pid)
		}
	}
}

// running reports whether pid is a live process; a zombie is dead (PID 1
// of a container may never reap it).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err)
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// need stops the test unless bin is on PATH: a skip, or under CI=true a
// failure (see testtool), saying how to get it.
func need(t *testing.T, bin, how string) {
	t.Helper()
	testtool.LookPath(t, bin, how)
}

const hangGrace = 2 * time.Second

func TestGoLive(t *testing.T) {
	t.Parallel() // mostly waiting on other processes
	need(t, "go", "install Go")
	dir := project(t, map[string]string{
		"go.mod":               "module example.com/live\n\ngo 1.22\n",
		"calc/calc.go":         "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
		"calc/calc_test.go":    "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n\nfunc TestSkip(t *testing.T) { t.Skip(\"later\") }\n",
		"fail/fail_test.go":    "package fail\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) {\n\tt.Run(\"ok\", func(t *testing.T) {})\n\tt.Run(\"bad\", func(t *testing.T) {\n\t\tt.Errorf(\"got %d, want %d\", 1, 2)\n\t})\n}\n",
		"broken/broken.go":     "package broken\n\nfunc F() int {\n\treturn undefinedName\n}\n",
		"broken/b_test.go":     "package broken\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) { F() }\n",
		"hang/hang_test.go":    hangGo,
		"notests/notests.go":   "package notests\n",
		"panics/panic_test.go": "package panics\n\nimport \"testing\"\n\nfunc TestNil(t *testing.T) {\n\tvar m map[string]int\n\tm[\"x\"] = 1\n}\n",
	})
	tests := []struct {
		name    string
		command string
		want    expect
	}{
		{"passing suite", "go test ./calc/", expect{outcome: Passed, counts: &Counts{Total: 2, Passed: 1, Skipped: 1}}},
		{"failing subtest", "go test ./fail/", expect{outcome: Failed, counts: &Counts{Total: 2, Passed: 1, Failed: 1},
			file: "fail/fail_test.go", line: 8, kind: KindFail, message: "got 1, want 2"}},
		{"panic", "go test ./panics/", expect{outcome: Failed, file: "panics/panic_test.go", line: 7, kind: KindPanic, message: "assignment to entry in nil map"}},
		{"build error", "go test ./broken/", expect{outcome: BuildFailed, file: "broken/broken.go", line: 4, message: "undefined: undefinedName"}},
		{"no test files", "go test ./notests/", expect{outcome: NoTests}},
		{"go's own -timeout", "go test -timeout 1s ./hang/", expect{outcome: Timeout, file: "hang/hang_test.go", kind: KindTimeout, message: "timed out after 1s"}},
		{"-json given already", "go test -json ./calc/", expect{outcome: Passed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := run(t, Options{Dir: dir, Command: tt.command})
			check(t, res, tt.want)
			if res.Framework != "go" {
				t.Errorf("framework %q detected, want go", res.Framework)
			}
		})
	}
	t.Run("hangs past the timeout", func(t *testing.T) {
		res := runHang(t, "go", 4*time.Second, Options{Dir: dir, Command: "go test ./hang/"})
		if len(res.Failures) == 0 || res.Failures[0].Kind != KindTimeout || res.Failures[0].ID != "example.com/live/hang.TestHang" {
			t.Errorf("failures %+v, want TestHang as a timeout", res.Failures)
		}
	})
}

// hangGo writes its pid and a child's, then sleeps.
const hangGo = `package hang

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestHang(t *testing.T) {
	child := exec.Command("sleep", "300")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(os.Getenv("PIDS"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	fmt.Fprintln(f, os.Getpid(), child.Process.Pid)
	f.Close()
	time.Sleep(time.Hour)
}
`

func TestPytestLive(t *testing.T) {
	t.Parallel() // mostly waiting on other processes
	_, missing := pytestCommand(t.TempDir())
	testtool.Need(t, "pytest", missing == "", "apt-get install python3-pytest, which .ci/install does")
	files := map[string]string{
		"calc.py":              "def add(a, b):\n    return a + b\n",
		"tests/test_calc.py":   "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
		"failing/test_fail.py": "from calc import add\n\n\ndef test_ok():\n    pass\n\n\ndef test_add():\n    total = add(2, 2)\n    assert total == 5\n",
		"broken/test_bad.py":   "import no_such_module\n\n\ndef test_x():\n    pass\n",
		"hang/test_hang.py":    "import os, subprocess, time\n\n\ndef test_hang():\n    child = subprocess.Popen(['sleep', '300'])\n    with open(os.environ['PIDS'], 'a') as f:\n        f.write(f'{os.getpid()} {child.pid}\\n')\n    time.sleep(300)\n",
		"empty/README":         "no tests here\n",
		"conftest.py":          "",
		// a module the test imports has a syntax error
		"syntax/test_imp.py": "from badmod import f\n\n\ndef test_x():\n    pass\n",
		"syntax/badmod.py":   "import os\n\n\ndef f(:\n    pass\n",
		// an exception raised while handling another
		"chained/test_chain.py": "def load():\n    return {}['key']\n\n\ndef test_chain():\n    try:\n        load()\n    except KeyError as e:\n        raise ValueError('bad config') from e\n",
		// a file that does not load and a failing test in another
		"mixed/test_a.py": "import no_such_module\n",
		"mixed/test_b.py": "def test_b():\n    assert 1 + 1 == 3\n",
	}
	dir := project(t, files)
	tests := []struct {
		name string
		args string // after the detected command
		want expect
	}{
		{"passing suite", "tests", expect{outcome: Passed, counts: &Counts{Total: 1, Passed: 1}}},
		{"failing assertion", "failing", expect{outcome: Failed, counts: &Counts{Total: 2, Passed: 1, Failed: 1},
			file: "failing/test_fail.py", line: 10, kind: KindFail, message: "assert 4 == 5"}},
		{"collection error", "broken", expect{outcome: CollectionError, file: "broken/test_bad.py", line: 1, kind: KindError, message: "No module named 'no_such_module'"}},
		{"no tests", "empty", expect{outcome: NoTests}},
		{"usage error", "--no-such-flag", expect{outcome: Error}},
		// the place of the syntax error, not the test file's import line
		{"syntax error in an imported module", "syntax", expect{outcome: CollectionError, file: "syntax/badmod.py", line: 4, kind: KindError, message: "SyntaxError"}},
		{"chained exception", "chained", expect{outcome: Failed, file: "chained/test_chain.py", line: 9, kind: KindPanic, message: "ValueError: bad config"}},
		// a file that does not load hides no other file's failure
		{"collection error beside a failure", "mixed --continue-on-collection-errors", expect{outcome: Failed, counts: &Counts{Total: 1, Failed: 1, Errors: 1}}},
	}
	cmd, _ := pytestCommand(dir)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := run(t, Options{Dir: dir, Command: cmd + " " + tt.args})
			check(t, res, tt.want)
		})
	}
	t.Run("the summary keeps the syntax error", func(t *testing.T) {
		res, _ := run(t, Options{Dir: dir, Command: cmd + " syntax"})
		for _, want := range []string{"syntax/badmod.py:4", "SyntaxError: invalid syntax", "def f(:"} {
			if !strings.Contains(res.Summary, want) {
				t.Errorf("summary lacks %q:\n%s", want, res.Summary)
			}
		}
		if strings.Contains(res.Summary, "_pytest") || strings.Contains(res.Summary, "importlib") {
			t.Errorf("summary shows pytest's own frames:\n%s", res.Summary)
		}
	})
	t.Run("detected with the default command", func(t *testing.T) {
		d := project(t, map[string]string{"test_one.py": "def test_one():\n    assert 1 + 1 == 2\n"})
		res, _ := run(t, Options{Dir: d, Framework: "auto"})
		check(t, res, expect{outcome: Passed})
		if res.Framework != "pytest" || res.Command != cmd {
			t.Errorf("framework %q command %q", res.Framework, res.Command)
		}
	})
	t.Run("hangs past the timeout", func(t *testing.T) {
		runHang(t, "pytest", 4*time.Second, Options{Dir: dir, Command: cmd + " hang"})
	})
}

func TestCargoLive(t *testing.T) {
	t.Parallel() // mostly waiting on other processes
	// cargo is not among the tools CI must have (.ci/install leaves it
	// out: a Rust toolchain is some 300 MB), so it stays a plain skip, also
	// where a cargo on PATH does not run (a rustup proxy without its home).
	if out, err := exec.Command("cargo", "--version").CombinedOutput(); err != nil {
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		t.Skipf("no cargo that runs (apt-get install cargo, or rustup): %v: %s", err, first)
	}
	manifest := "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"
	dir := project(t, map[string]string{
		"Cargo.toml": manifest,
		"src/lib.rs": cargoLib,
	})
	broken := project(t, map[string]string{
		"Cargo.toml": manifest,
		"src/lib.rs": "pub fn add(a: i32) -> i32 {\n    a + missing\n}\n",
	})
	target := filepath.Join(t.TempDir(), "target")
	env := func(cmd string) string { return "CARGO_NET_OFFLINE=true CARGO_TARGET_DIR=" + target + " " + cmd }
	tests := []struct {
		name string
		dir  string
		cmd  string
		want expect
	}{
		{"passing tests", dir, "cargo test pass_", expect{outcome: Passed, counts: &Counts{Total: 2, Passed: 1, Skipped: 1}}},
		{"failing assertion", dir, "cargo test fail_", expect{outcome: Failed, counts: &Counts{Total: 1, Failed: 1},
			file: "src/lib.rs", line: 46, kind: KindFail, message: "assertion"}},
		{"build error", broken, "cargo test", expect{outcome: BuildFailed, file: "src/lib.rs", line: 2, message: "cannot find value `missing`"}},
		{"no tests matched", dir, "cargo test no_such_test_name", expect{outcome: NoTests}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := run(t, Options{Dir: tt.dir, Command: env(tt.cmd)})
			check(t, res, tt.want)
			if res.Framework != "cargo" {
				t.Errorf("framework %q detected, want cargo", res.Framework)
			}
			// the command as it ran, so rerunning it gives the same run
			if !strings.Contains(res.Command, "cargo test --no-fail-fast") {
				t.Errorf("recorded command %q lacks --no-fail-fast", res.Command)
			}
		})
	}
	t.Run("doc-tests at their source lines", func(t *testing.T) {
		res, _ := run(t, Options{Dir: dir, Command: env("cargo test --doc")})
		check(t, res, expect{outcome: Failed, counts: &Counts{Total: 4, Failed: 4}})
		want := map[string]int{
			"src/lib.rs - add (line 1)":      5,  // the second assert_eq! of the example
			"src/lib.rs - hidden (line 11)":  14, // after two hidden lines
			"src/lib.rs - main (line 18)":    21, // an example with its own fn main
			"src/lib.rs - nothing (line 26)": 27, // does not compile: rustc's place
		}
		for _, f := range res.Failures {
			if f.File != "src/lib.rs" || f.Line != want[f.ID] {
				t.Errorf("%s at %s:%d, want src/lib.rs:%d (%s)", f.ID, f.File, f.Line, want[f.ID], f.Message)
			}
		}
		if len(res.Failures) != len(want) {
			t.Errorf("%d failures, want %d", len(res.Failures), len(want))
		}
	})
	t.Run("hangs past the timeout", func(t *testing.T) {
		res := runHang(t, "cargo", 4*time.Second, Options{Dir: dir, Command: env("cargo test hang_ -- --test-threads=1")})
		if len(res.Failures) == 0 || res.Failures[0].ID != "tests::hang_forever" {
			t.Errorf("failures %+v, want tests::hang_forever as a timeout", res.Failures)
		}
	})
}

const cargoLib = `/// ` + "```" + `
/// let x = calc::add(1, 2);
///
/// assert_eq!(x, 3);
/// assert_eq!(x, 4);
/// ` + "```" + `
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

/// ` + "```" + `
/// # let z = 1;
/// # let w = 2;
/// assert!(z + w == 7);
/// ` + "```" + `
pub fn hidden() {}

/// ` + "```" + `
/// fn main() {
///     let x = calc::add(1, 2);
///     assert_eq!(x, 5);
/// }
/// ` + "```" + `
pub fn main() {}

/// ` + "```" + `
/// let y: i32 = "x";
/// ` + "```" + `
pub fn nothing() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_add() {
        assert_eq!(add(1, 2), 3);
    }

    #[test]
    #[ignore]
    fn pass_later() {}

    #[test]
    fn fail_add() {
        assert_eq!(add(2, 2), 5);
    }

    #[test]
    fn hang_forever() {
        use std::io::Write;
        let child = std::process::Command::new("sleep").arg("300").spawn().unwrap();
        let mut f = std::fs::OpenOptions::new().append(true).create(true)
            .open(std::env::var("PIDS").unwrap()).unwrap();
        writeln!(f, "{} {}", std::process::id(), child.id()).unwrap();
        std::thread::sleep(std::time::Duration::from_secs(300));
    }
}
`

// nodeModules is the node_modules directory holding jest and vitest that
// $RUNNER_TEST_NODE_MODULES names (.ci/install fills one, .ci/run sets the
// variable). The tests never install anything themselves, nor look in the
// user's cache for one.
func nodeModules(t *testing.T, bin string) string {
	t.Helper()
	need(t, "node", "apt-get install nodejs npm, which .ci/install does")
	const how = "npm install --prefix DIR jest@29 vitest@3 vite@6 and set RUNNER_TEST_NODE_MODULES=DIR/node_modules; .ci/install and .ci/run do"
	dir := testtool.FromEnv(t, "RUNNER_TEST_NODE_MODULES", bin, how)
	_, err := os.Stat(filepath.Join(dir, ".bin", bin))
	testtool.Need(t, bin, err == nil, "not in $RUNNER_TEST_NODE_MODULES="+dir+"; "+how)
	return dir
}

func nodeProject(t *testing.T, modules string, files map[string]string) string {
	dir := project(t, files)
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// jsHang writes its pid and a child's, then waits forever.
const jsHang = `
const { spawn } = require('node:child_process');
const fs = require('node:fs');
test('hangs', async () => {
  const child = spawn('sleep', ['300']);
  fs.appendFileSync(process.env.PIDS, process.pid + ' ' + child.pid + '\n');
  await new Promise(() => {});
}, 600000);
`

func TestJestLive(t *testing.T) {
	t.Parallel() // mostly waiting on other processes
	modules := nodeModules(t, "jest")
	dir := nodeProject(t, modules, map[string]string{
		"package.json":       `{"name": "live", "private": true, "devDependencies": {"jest": "*"}}`,
		"sum.js":             "module.exports = (a, b) => a + b;\n",
		"pass/sum.test.js":   "const sum = require('../sum');\ntest('adds', () => {\n  expect(sum(1, 2)).toBe(3);\n});\ntest.skip('later', () => {});\n",
		"fail/sum.test.js":   "const sum = require('../sum');\ndescribe('sum', () => {\n  test('adds wrong', () => {\n    expect(sum(2, 2)).toBe(5);\n  });\n});\n",
		"broken/bad.test.js": "const x = require('./nosuch');\ntest('x', () => {});\n",
		"hang/hang.test.js":  jsHang,
	})
	tests := []struct {
		name string
		args string
		want expect
	}{
		{"passing suite", "pass", expect{outcome: Passed, counts: &Counts{Total: 2, Passed: 1, Skipped: 1}}},
		{"failing assertion", "fail", expect{outcome: Failed, counts: &Counts{Total: 1, Failed: 1},
			file: "fail/sum.test.js", line: 4, kind: KindFail, message: "expect(received).toBe(expected)"}},
		{"file that does not load", "broken", expect{outcome: CollectionError, file: "broken/bad.test.js", line: 1, kind: KindError, message: "Cannot find module './nosuch'"}},
		{"no tests", "no_such_dir", expect{outcome: NoTests}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := run(t, Options{Dir: dir, Command: "npx --no -- jest " + tt.args})
			check(t, res, tt.want)
			if res.Framework != "jest" {
				t.Errorf("framework %q detected, want jest", res.Framework)
			}
		})
	}
	t.Run("hangs past the timeout", func(t *testing.T) {
		runHang(t, "jest", 8*time.Second, Options{Dir: dir, Command: "npx --no -- jest hang"})
	})
}

func TestVitestLive(t *testing.T) {
	t.Parallel() // mostly waiting on other processes
	modules := nodeModules(t, "vitest")
	imports := "import { describe, test, expect } from 'vitest';\n"
	dir := nodeProject(t, modules, map[string]string{
		"package.json":       `{"name": "live", "private": true, "type": "module", "scripts": {"test": "vitest"}}`,
		"sum.js":             "export const sum = (a, b) => a + b;\n",
		"pass/sum.test.js":   imports + "import { sum } from '../sum.js';\ntest('adds', () => {\n  expect(sum(1, 2)).toBe(3);\n});\ntest.skip('later', () => {});\n",
		"fail/sum.test.js":   imports + "import { sum } from '../sum.js';\ndescribe('sum', () => {\n  test('adds wrong', () => {\n    expect(sum(2, 2)).toBe(5);\n  });\n});\n",
		"broken/bad.test.js": imports + "import { x } from './nosuch.js';\ntest('x', () => {});\n",
		// a spec file holding only data, beside failing tests
		"data/cases.spec.js": "export const cases = [[1, 2, 3], [2, 2, 5]];\n",
		"data/sum.test.js": imports + "import { sum } from '../sum.js';\nimport { cases } from './cases.spec.js';\n" +
			"for (const [a, b, want] of cases) {\n  test(`${a}+${b}`, () => {\n    expect(sum(a, b)).toBe(want);\n  });\n}\n",
		"hang/hang.test.js": imports + "import { spawn } from 'node:child_process';\nimport fs from 'node:fs';\n" +
			"test('hangs', async () => {\n  const child = spawn('sleep', ['300']);\n" +
			"  fs.appendFileSync(process.env.PIDS, process.pid + ' ' + child.pid + '\\n');\n  await new Promise(() => {});\n}, 600000);\n",
	})
	tests := []struct {
		name string
		args string
		want expect
	}{
		{"passing suite", "pass", expect{outcome: Passed, counts: &Counts{Total: 2, Passed: 1, Skipped: 1}}},
		{"failing assertion", "fail", expect{outcome: Failed, counts: &Counts{Total: 1, Failed: 1},
			file: "fail/sum.test.js", line: 5, kind: KindFail, message: "expected 4 to be 5"}},
		{"file that does not load", "broken", expect{outcome: CollectionError, file: "broken/bad.test.js", kind: KindError, message: "nosuch.js"}},
		// the data-only file is an error, the failing test still a failure
		{"data-only spec file beside failures", "data", expect{outcome: Failed, counts: &Counts{Total: 2, Passed: 1, Failed: 1, Errors: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// "npm test" runs `vitest`: the step adds `run` and the reporters
			res, _ := run(t, Options{Dir: dir, Command: "npm test " + tt.args})
			check(t, res, tt.want)
			if res.Framework != "vitest" {
				t.Errorf("framework %q detected, want vitest", res.Framework)
			}
		})
	}
	t.Run("hangs past the timeout", func(t *testing.T) {
		runHang(t, "vitest", 8*time.Second, Options{Dir: dir, Command: "npx --no -- vitest hang"})
	})
}

func TestTapLive(t *testing.T) {
	t.Parallel() // mostly waiting on other processes
	need(t, "node", "apt-get install nodejs, which .ci/install does")
	imports := "import test from 'node:test';\nimport assert from 'node:assert';\n"
	dir := project(t, map[string]string{
		"pass/a.test.mjs":   imports + "test('adds', () => {\n  assert.strictEqual(1 + 2, 3);\n});\ntest('later', { skip: true }, () => {});\n",
		"fail/a.test.mjs":   imports + "test('group', async (t) => {\n  await t.test('adds wrong', () => {\n    assert.strictEqual(2 + 2, 5);\n  });\n});\n",
		"broken/a.test.mjs": imports + "test('x', () => {\n",
		"hang/a.test.mjs":   imports + "import { spawn } from 'node:child_process';\nimport fs from 'node:fs';\ntest('hangs', async () => {\n  const child = spawn('sleep', ['300']);\n  fs.appendFileSync(process.env.PIDS, process.pid + ' ' + child.pid + '\\n');\n  await new Promise(() => setInterval(() => {}, 1000));\n});\n",
	})
	tests := []struct {
		name string
		dir  string
		want expect
	}{
		{"passing suite", "pass", expect{outcome: Passed, counts: &Counts{Total: 2, Passed: 1, Skipped: 1}}},
		{"failing assertion in a subtest", "fail", expect{outcome: Failed, counts: &Counts{Total: 1, Failed: 1},
			file: "fail/a.test.mjs", line: 5, kind: KindFail, message: "Expected values to be strictly equal"}},
		{"syntax error", "broken", expect{outcome: Failed, file: "broken/a.test.mjs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := run(t, Options{Dir: dir, Framework: "tap", Command: "node --test --test-reporter=tap " + tt.dir + "/"})
			check(t, res, tt.want)
		})
	}
	t.Run("hangs past the timeout", func(t *testing.T) {
		runHang(t, "tap", 4*time.Second, Options{Dir: dir, Framework: "tap", Command: "node --test --test-reporter=tap hang/"})
	})
}

func TestGenericLive(t *testing.T) {
	t.Parallel() // mostly waiting on other processes
	dir := t.TempDir()
	tests := []struct {
		name    string
		command string
		want    expect
	}{
		{"exit 0", "echo all good", expect{outcome: Passed}},
		{"exit 1", "echo 'something broke' >&2; exit 1", expect{outcome: Failed}},
		{"runner not installed", "no-such-test-runner --all", expect{outcome: Error}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := run(t, Options{Dir: dir, Command: tt.command})
			check(t, res, tt.want)
			if res.Framework != "generic" {
				t.Errorf("framework %q, want generic", res.Framework)
			}
		})
	}
	t.Run("a run of no test is no_tests", func(t *testing.T) {
		need(t, "python3", "apt-get install python3, which .ci/install does")
		res, _ := run(t, Options{Dir: dir, Framework: "generic", Command: "python3 -m unittest discover -s ."})
		check(t, res, expect{outcome: NoTests})
	})
	t.Run("failure output is in the summary", func(t *testing.T) {
		res, _ := run(t, Options{Dir: dir, Command: "echo 'something broke' >&2; exit 1"})
		if !strings.Contains(res.Summary, "something broke") {
			t.Errorf("summary lacks the output: %q", res.Summary)
		}
	})
	t.Run("missing binary is named", func(t *testing.T) {
		res, _ := run(t, Options{Dir: dir, Framework: "pytest", Command: "no-such-pytest -q"})
		if res.Outcome != Error || !strings.Contains(res.Summary, "no-such-pytest not found") {
			t.Errorf("outcome %s summary %q", res.Outcome, res.Summary)
		}
	})
	t.Run("background sleep and a hang end with the timeout", func(t *testing.T) {
		const timeout = time.Second
		res, pids := run(t, Options{Dir: dir, Command: `sleep 300 & echo $! >> "$PIDS"; echo $$ >> "$PIDS"; sleep 300`, Timeout: timeout, Grace: hangGrace})
		checkHung(t, res, pids, timeout, hangGrace)
	})
}

// runHang runs a suite that hangs, with a timeout fitted to how slow the
// framework has been here, and checks that it ended in time with none of
// its processes left.
func runHang(t *testing.T, framework string, base time.Duration, opt Options) *Result {
	t.Helper()
	skipShort(t)
	opt.Timeout, opt.Grace = hangTimeout(framework, base), hangGrace
	// On a busy machine the suite may not reach the hanging test before
	// the timeout fires; that says nothing about the timeout, so try again
	// with twice the time, and fail only if it never gets there.
	for attempt := 1; ; attempt++ {
		res, pids := run(t, opt)
		if _, err := os.Stat(pids); err != nil && attempt < 3 && opt.Timeout < time.Minute {
			t.Logf("the hanging test had not started after %v; again with %v", opt.Timeout, 2*opt.Timeout)
			opt.Timeout *= 2
			continue
		}
		checkHung(t, res, pids, opt.Timeout, hangGrace)
		return res
	}
}

func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a timeout")
	}
}

// TestLargeOutput runs suites printing 200 MB and checks the bytes
// allocated while reading them stay bounded.
func TestLargeOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("200 MB of output")
	}
	tests := []struct {
		framework, command string
	}{
		{"generic", "yes 'some very loud test output' | head -c 200000000; exit 1"},
		// a failing test whose output is 200 MB, as go test prints it without -json
		{"go", "echo '--- FAIL: TestLoud (1.00s)'; yes '    loud_test.go:12: again' | head -c 200000000; echo 'FAIL\texample.com/loud\t1.0s'"},
	}
	for _, tt := range tests {
		t.Run(tt.framework, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			res, err := Run(context.Background(), Options{Dir: t.TempDir(), Framework: tt.framework, Command: tt.command})
			if err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s, 200 MB of output: outcome %s in %v; %.1f MiB allocated in total, heap in use %.1f MiB",
				tt.framework, res.Outcome, time.Duration(res.DurationMS)*time.Millisecond,
				float64(alloc)/(1<<20), float64(after.HeapInuse)/(1<<20))
			if res.Outcome != Failed || len(res.Summary) > maxSummary {
				t.Errorf("outcome %s, summary of %d bytes", res.Outcome, len(res.Summary))
			}
			if after.HeapInuse > 64<<20 {
				t.Errorf("heap in use %d MiB after a 200 MB output", after.HeapInuse>>20)
			}
		})
	}
}

// unittestFiles is a project whose tests use Python's unittest: one
// passing test, one failing assertion, an exception in the code under
// test, a module that does not import and one with a syntax error, each
// suite in its own directory.
var unittestFiles = map[string]string{
	"calc.py":            "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    return a / b\n",
	"pass/test_calc.py":  "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n\n    @unittest.skip('later')\n    def test_later(self):\n        pass\n",
	"fail/test_calc.py":  "import unittest\nfrom calc import add, div\n\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n        pass\n\n    def test_add(self):\n        total = add(2, 2)\n        self.assertEqual(total, 5)\n",
	"raise/test_calc.py": "import unittest\nfrom calc import div\n\n\nclass T(unittest.TestCase):\n    def test_div(self):\n        div(1, 0)\n",
	"broken/test_bad.py": "import unittest\nimport no_such_module\n",
	"syntax/test_syn.py": "import unittest\n\n\ndef f(:\n    pass\n",
	"mixed/test_a.py":    "import unittest\nimport no_such_module\n",
	"mixed/test_b.py":    "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_b(self):\n        self.assertTrue(False, 'b is wrong')\n",
	"empty/README":       "no tests here\n",
	"pass/__init__.py":   "", "fail/__init__.py": "", "raise/__init__.py": "", "broken/__init__.py": "",
	"syntax/__init__.py": "", "mixed/__init__.py": "", "empty/__init__.py": "", "hang/__init__.py": "",
	"hang/test_hang.py": "import os, subprocess, time, unittest\n\n\nclass T(unittest.TestCase):\n    def test_hang(self):\n        child = subprocess.Popen(['sleep', '300'])\n        with open(os.environ['PIDS'], 'a') as f:\n            f.write(f'{os.getpid()} {child.pid}\\n')\n        time.sleep(300)\n",
}

// unittestCases are what each directory of unittestFiles gives, whichever
// runner of unittest's family runs it.
var unittestCases = []struct {
	dir  string
	want expect
}{
	{"pass", expect{outcome: Passed, counts: &Counts{Total: 2, Passed: 1, Skipped: 1}}},
	{"fail", expect{outcome: Failed, counts: &Counts{Total: 2, Passed: 1, Failed: 1},
		file: "fail/test_calc.py", line: 11, kind: KindFail, message: "AssertionError: 4 != 5"}},
	{"raise", expect{outcome: Failed, counts: &Counts{Total: 1, Failed: 1},
		file: "raise/test_calc.py", line: 7, kind: KindPanic, message: "ZeroDivisionError: division by zero"}},
	{"broken", expect{outcome: CollectionError, counts: &Counts{Errors: 1},
		file: "broken/test_bad.py", line: 2, kind: KindError, message: "No module named 'no_such_module'"}},
	{"syntax", expect{outcome: CollectionError, counts: &Counts{Errors: 1},
		file: "syntax/test_syn.py", line: 4, kind: KindError, message: "SyntaxError"}},
	// a module that does not import hides nothing of the others
	{"mixed", expect{outcome: Failed, counts: &Counts{Total: 1, Failed: 1, Errors: 1}}},
	{"empty", expect{outcome: NoTests, counts: &Counts{}}},
}

func TestUnittestLive(t *testing.T) {
	t.Parallel() // mostly waiting on other processes
	need(t, "python3", "apt-get install python3, which .ci/install does")
	dir := project(t, unittestFiles)
	for _, tt := range unittestCases {
		t.Run(tt.dir, func(t *testing.T) {
			// auto: the command says unittest, though test_*.py files
			// alone would say pytest
			res, _ := run(t, Options{Dir: dir, Command: "python3 -m unittest discover -t . -s " + tt.dir})
			check(t, res, tt.want)
			if res.Framework != "unittest" {
				t.Errorf("framework %q detected, want unittest", res.Framework)
			}
		})
	}
	t.Run("failures are in the summary", func(t *testing.T) {
		res, _ := run(t, Options{Dir: dir, Command: "python3 -m unittest discover -t . -s mixed"})
		for _, want := range []string{"FAILED: 1 of 1 test failed, 1 error", "mixed/test_b.py:6", "AssertionError: False is not true : b is wrong",
			"mixed/test_a.py:2", "No module named 'no_such_module'"} {
			if !strings.Contains(res.Summary, want) {
				t.Errorf("summary lacks %q:\n%s", want, res.Summary)
			}
		}
	})
	t.Run("detected with the default command in a project pytest is not for", func(t *testing.T) {
		d := project(t, map[string]string{"test_one.py": "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_one(self):\n        self.assertEqual(1 + 1, 3)\n"})
		res, _ := run(t, Options{Dir: d, Framework: "unittest"})
		check(t, res, expect{outcome: Failed, file: "test_one.py", line: 6, message: "AssertionError: 2 != 3"})
		if res.Command != "python3 -m unittest" {
			t.Errorf("command %q", res.Command)
		}
	})
	t.Run("usage error", func(t *testing.T) {
		res, _ := run(t, Options{Dir: dir, Command: "python3 -m unittest --no-such-flag"})
		check(t, res, expect{outcome: Error})
		if !strings.Contains(res.Summary, "unrecognized arguments: --no-such-flag") {
			t.Errorf("summary does not say what is wrong: %q", res.Summary)
		}
	})
	t.Run("under pytest's framework, run by a script", func(t *testing.T) {
		// a project detected as pytest's whose test command runs unittest
		res, _ := run(t, Options{Dir: dir, Framework: "pytest", Command: "sh -c 'python3 -m unittest discover -t . -s fail'"})
		check(t, res, unittestCases[1].want)
	})
	t.Run("verbose, hangs past the timeout", func(t *testing.T) {
		res := runHang(t, "unittest", 4*time.Second, Options{Dir: dir, Command: "python3 -m unittest discover -v -t . -s hang"})
		if len(res.Failures) == 0 || res.Failures[0].Kind != KindTimeout || !strings.HasPrefix(res.Failures[0].ID, "test_hang (") {
			t.Errorf("failures %+v, want test_hang as a timeout", res.Failures)
		}
	})
}

// TestNose2AndDjangoLive runs the same suites with nose2 and with
// Django's test runner, which print unittest's text.
func TestNose2AndDjangoLive(t *testing.T) {
	t.Parallel() // mostly waiting on other processes
	nose2 := ""
	for _, bin := range []string{"nose2", "nose2-3"} {
		if p, err := exec.LookPath(bin); err == nil {
			nose2 = p
			break
		}
	}
	testtool.Need(t, "nose2", nose2 != "", "apt-get install python3-nose2, which .ci/install does")
	django := testtool.LookPath(t, "django-admin", "apt-get install python3-django, which .ci/install does")
	files := map[string]string{"settings.py": "SECRET_KEY = 'test'\nINSTALLED_APPS = []\nDATABASES = {}\n"}
	for name, content := range unittestFiles {
		files[name] = content
	}
	dir := project(t, files)
	for _, tt := range unittestCases {
		t.Run("nose2/"+tt.dir, func(t *testing.T) {
			res, _ := run(t, Options{Dir: dir, Framework: "unittest", Command: nose2 + " -t . -s " + tt.dir})
			check(t, res, tt.want)
		})
		t.Run("django/"+tt.dir, func(t *testing.T) {
			res, _ := run(t, Options{Dir: dir, Command: "PYTHONPATH=. " + django + " test --settings=settings " + tt.dir})
			check(t, res, tt.want)
			if res.Framework != "unittest" {
				t.Errorf("framework %q detected, want unittest", res.Framework)
			}
		})
	}
}

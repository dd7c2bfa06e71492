package testrun

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		sub   string // detect in this subdirectory
		want  string
	}{
		{"go module", map[string]string{"go.mod": "module x\n"}, "", "go"},
		{"package of a go module", map[string]string{"go.mod": "module x\n", "pkg/a.go": ""}, "pkg", "go"},
		{"cargo", map[string]string{"Cargo.toml": ""}, "", "cargo"},
		{"pytest.ini", map[string]string{"pytest.ini": ""}, "", "pytest"},
		{"pyproject with pytest", map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\n"}, "", "pytest"},
		{"pyproject without pytest, tests dir", map[string]string{"pyproject.toml": "[project]\n", "tests/test_a.py": ""}, "", "pytest"},
		{"conftest", map[string]string{"conftest.py": ""}, "", "pytest"},
		{"test file", map[string]string{"test_a.py": ""}, "", "pytest"},
		{"vitest dependency", map[string]string{"package.json": `{"devDependencies": {"vitest": "^1"}}`}, "", "vitest"},
		{"jest dependency", map[string]string{"package.json": `{"devDependencies": {"jest": "^29"}}`}, "", "jest"},
		{"script wins over dependency", map[string]string{"package.json": `{"scripts": {"test": "jest --ci"}, "devDependencies": {"vitest": "1"}}`}, "", "jest"},
		{"node --test script", map[string]string{"package.json": `{"scripts": {"test": "node --test"}}`}, "", "tap"},
		{"vitest config", map[string]string{"package.json": `{}`, "vitest.config.ts": ""}, "", "vitest"},
		{"bad package.json", map[string]string{"package.json": `{`}, "", "generic"},
		{"nothing", map[string]string{"README": ""}, "", "generic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				p := filepath.Join(dir, name)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := Detect(filepath.Join(dir, tt.sub)); got != tt.want {
				t.Errorf("Detect = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPrepareCommand(t *testing.T) {
	const tmp = "/tmp/r"
	tests := []struct {
		fw, cmd, want string
	}{
		{"go", "go test ./...", "go test -json ./..."},
		{"go", "go test", "go test -json"},
		{"go", "cd sub && go  test -run X ./...", "cd sub && go  test -json -run X ./..."},
		{"go", "go test -json ./...", "go test -json ./..."},
		{"go", "go vet ./... && go test ./...", "go vet ./... && go test -json ./..."},
		{"go", "make test", "make test"},
		{"cargo", "cargo test", "cargo test --no-fail-fast"},
		{"cargo", "cargo test --no-fail-fast -- x", "cargo test --no-fail-fast -- x"},
		{"cargo", "cargo +nightly test foo", "cargo +nightly test --no-fail-fast foo"},
		{"jest", "npx jest", "npx jest --json --outputFile='/tmp/r/report.json'"},
		{"jest", "npx --no -- jest src/ && echo ok", "npx --no -- jest --json --outputFile='/tmp/r/report.json' src/ && echo ok"},
		{"jest", "npm test", "npm test -- --json --outputFile='/tmp/r/report.json'"},
		{"jest", "yarn test", "yarn test --json --outputFile='/tmp/r/report.json'"},
		{"vitest", "npx vitest", "npx vitest run --reporter=default --reporter=json --outputFile.json='/tmp/r/report.json'"},
		{"vitest", "npx vitest run src", "npx vitest run --reporter=default --reporter=json --outputFile.json='/tmp/r/report.json' src"},
		{"vitest", "vitest watch", "vitest run --reporter=default --reporter=json --outputFile.json='/tmp/r/report.json'"},
		{"vitest", "vitest --coverage", "vitest run --reporter=default --reporter=json --outputFile.json='/tmp/r/report.json' --coverage"},
		{"vitest", "npm test", "npm test -- --reporter=default --reporter=json --outputFile.json='/tmp/r/report.json'"},
		{"tap", "prove -v t/", "prove -v t/"},
	}
	for _, tt := range tests {
		t.Run(tt.fw+" "+tt.cmd, func(t *testing.T) {
			got, _ := lookup(tt.fw).prepare(tt.cmd, tmp, nil)
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
	t.Run("pytest through the environment", func(t *testing.T) {
		cmd, env := pytestFramework.prepare("tox -e py3", tmp, []string{"PYTEST_ADDOPTS=-x", "HOME=/h"})
		if cmd != "tox -e py3" {
			t.Errorf("command changed to %q", cmd)
		}
		if got := getEnv(env, "PYTEST_ADDOPTS"); got != "-x --junitxml=/tmp/r/junit.xml -o junit_family=xunit1" {
			t.Errorf("PYTEST_ADDOPTS = %q", got)
		}
	})
}

// TestRecordedCommand: what changes what runs (cargo's --no-fail-fast,
// vitest's run) is in the command the result records; report flags are not.
func TestRecordedCommand(t *testing.T) {
	tests := []struct{ fw, cmd, want string }{
		{"cargo", "cargo test", "cargo test --no-fail-fast"},
		{"cargo", "cd core && cargo +stable test -p x", "cd core && cargo +stable test --no-fail-fast -p x"},
		{"cargo", "cargo test --no-fail-fast", "cargo test --no-fail-fast"},
		{"vitest", "npx --no -- vitest", "npx --no -- vitest run"},
		{"vitest", "vitest watch src", "vitest run src"},
		{"vitest", "vitest run", "vitest run"},
		{"vitest", "npm test", "npm test"},
		{"go", "go test ./...", "go test ./..."},
		{"jest", "npx jest", "npx jest"},
	}
	for _, tt := range tests {
		fw := lookup(tt.fw)
		got := tt.cmd
		if fw.rewrite != nil {
			got = fw.rewrite(got)
		}
		if got != tt.want {
			t.Errorf("%s: %q recorded as %q, want %q", tt.fw, tt.cmd, got, tt.want)
		}
	}
}

func TestMissingTool(t *testing.T) {
	tests := []struct {
		name   string
		code   int
		output string
		want   string
	}{
		{"dash", 127, "sh: 1: pytest: not found", "pytest"},
		{"bash", 127, "bash: line 1: cargo: command not found", "cargo"},
		{"env", 127, "/usr/bin/env: 'node': No such file or directory", "node"},
		{"npx --no", 1, `npm error npx canceled due to missing packages and no YES option: ["vitest@4.1.12"]`, "vitest"},
		{"npx scoped", 1, `npm error npx canceled due to missing packages and no YES option: ["@playwright/test@1.2"]`, "@playwright/test"},
		{"python module", 1, "/usr/bin/python3: No module named pytest", "pytest"},
		{"test importing a missing module", 2, "Traceback...\nE   ModuleNotFoundError: No module named 'pytest_foo'", ""},
		{"ordinary failure", 1, "FAIL\tx\t0.1s", ""},
		{"success", 0, "sh: 1: x: not found", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := missingTool(tt.code, tt.output, "fallback"); got != tt.want {
				t.Errorf("missingTool = %q, want %q", got, tt.want)
			}
		})
	}
	if got := missingText("pytest"); got != "pytest not found: apt-get install python3-pytest (or: pip install pytest)" {
		t.Errorf("missingText = %q", got)
	}
}

func TestExcerpt(t *testing.T) {
	var many []string
	for i := range 100 {
		many = append(many, fmt.Sprintf("line %d", i))
	}
	tests := []struct {
		name string
		in   []string
		want string
	}{
		{"colour and framing removed", []string{"=== RUN   TestX", "\x1b[31mred\x1b[0m text", "--- FAIL: TestX (0.00s)"}, "red text"},
		{"blank runs collapsed, edges trimmed", []string{"", "a", "", "", "b", ""}, "a\n\nb"},
		{"at most 40 lines", many, strings.Join(many[:39], "\n") + "\n[... 61 more lines]"},
		{"long line clipped", []string{strings.Repeat("x", 1000)}, strings.Repeat("x", maxLineLen) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := excerpt(tt.in, goFraming); got != tt.want {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestLineWriter(t *testing.T) {
	var got []string
	w := &lineWriter{fn: func(l string) { got = append(got, l) }}
	w.Write([]byte("one\ntw"))
	w.Write([]byte("o\r\n" + strings.Repeat("y", maxReadLine+10) + "\nthree"))
	w.flush()
	if len(got) != 4 || got[0] != "one" || got[1] != "two" || len(got[2]) != maxReadLine || got[3] != "three" {
		t.Errorf("lines %d: %q %q (%d bytes) %q", len(got), got[0], got[1], len(got[2]), got[len(got)-1])
	}
}

func TestSummaryIsBounded(t *testing.T) {
	res := &Result{Outcome: Failed, Command: "go test ./...", Counts: Counts{Total: 500, Failed: 300, Passed: 200}}
	for i := range 300 {
		res.Failures = append(res.Failures, Failure{ID: fmt.Sprintf("TestN%d", i), File: "a_test.go", Line: i,
			Message: strings.Repeat("m", 200), Excerpt: strings.Repeat("long excerpt line\n", 40), Kind: KindFail})
	}
	s := summarize(res, "", 5, 0)
	if len(s) > maxSummary {
		t.Errorf("summary is %d bytes", len(s))
	}
	if !strings.HasPrefix(s, "FAILED: 300 of 500 tests failed (200 passed).") || !strings.Contains(s, "and 29") {
		t.Errorf("summary:\n%s", s)
	}
}

// TestGenericSummaries: under the generic framework the closing lines of
// common runners still count, so a command that ran no test (or skipped
// them all) is no_tests, as under every other framework, and not a pass.
func TestGenericSummaries(t *testing.T) {
	tests := []struct {
		name   string
		exit   int
		output string
		want   string
		passed int
	}{
		{"unittest ran nothing", 0, "\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nOK", NoTests, 0},
		{"unittest 3.12 ran nothing", 5, "Ran 0 tests in 0.000s\n\nNO TESTS RAN", NoTests, 0},
		{"unittest all skipped", 0, "Ran 2 tests in 0.001s\n\nOK (skipped=2)", NoTests, 0},
		{"unittest passed", 0, "..\nRan 2 tests in 0.001s\n\nOK", Passed, 2},
		{"unittest failed", 1, "Ran 3 tests in 0.001s\n\nFAILED (failures=1, errors=1)", Failed, 1},
		{"pytest ran nothing", 5, "collected 0 items\n\n============================ no tests ran in 0.01s =============================", NoTests, 0},
		{"pytest -q passed", 0, "..\n2 passed in 0.03s", Passed, 2},
		{"pytest all skipped", 0, "======================== 2 skipped in 0.01s ========================", NoTests, 0},
		{"libtest ran nothing", 0, "running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s", NoTests, 0},
		{"libtest, two binaries", 0, "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured\ntest result: ok. 3 passed; 0 failed; 0 ignored; 0 measured", Passed, 3},
		{"jest found nothing", 1, "No tests found, exiting with code 1\nRun with `--passWithNoTests` to exit with code 0", NoTests, 0},
		{"jest passWithNoTests", 0, "No tests found, exiting with code 0", NoTests, 0},
		{"jest passed", 0, "Tests:       1 skipped, 2 passed, 3 total", Passed, 2},
		{"vitest found nothing", 1, "No test files found, exiting with code 1", NoTests, 0},
		{"vitest passed", 0, " Test Files  1 passed (1)\n      Tests  2 passed | 1 skipped (3)", Passed, 2},
		{"go, no test files", 0, "?   \texample.com/a\t[no test files]", NoTests, 0},
		{"go, no tests to run", 0, "testing: warning: no tests to run\nPASS\nok  \texample.com/a\t0.002s [no tests to run]", NoTests, 0},
		{"go, some packages without tests", 0, "?   \texample.com/a\t[no test files]\nok  \texample.com/b\t0.002s", Passed, 0},
		{"TAP plan of nothing", 0, "TAP version 13\n1..0 # no tests", NoTests, 0},
		{"node --test ran nothing", 0, "# tests 0\n# suites 0\n# pass 0\n# fail 0", NoTests, 0},
		{"mocha ran nothing", 0, "\n  0 passing (1ms)\n", NoTests, 0},
		{"mocha passed", 0, "\n  4 passing (8ms)\n  1 pending\n", Passed, 4},
		{"rspec ran nothing", 0, "Finished in 0.0001 seconds\n0 examples, 0 failures", NoTests, 0},
		{"ExUnit", 1, "1 doctest, 3 tests, 1 failure", Failed, 3},
		{"phpunit", 0, "No tests executed!", NoTests, 0},
		{"ctest", 8, "No tests were found!!!", NoTests, 0},
		{"dotnet", 0, "Passed!  - Failed:     0, Passed:     0, Skipped:     0, Total:     0", NoTests, 0},
		{"maven", 0, "[INFO] Tests run: 0, Failures: 0, Errors: 0, Skipped: 0", NoTests, 0},
		{"nothing recognised, exit 0", 0, "all good", Passed, 0},
		{"nothing recognised, exit 1", 1, "something broke", Failed, 0},
		{"a failure the command ignored", 0, "Ran 2 tests in 0.1s\n\nFAILED (failures=1)\n(ignored)", Passed, 0},
	}
	// The lines come on stdout alone, or on stderr with a line the
	// command printed on stdout meanwhile after each (two pipes, read as
	// their lines come).
	feeds := map[string]func(string, parser){
		"stdout": func(text string, p parser) { feed(text, p.stdout) },
		"stderr, stdout between": func(text string, p parser) {
			feed(text, func(l string) { p.stderr(l); p.stdout("System check identified no issues (0 silenced).") })
		},
	}
	for _, tt := range tests {
		for how, fn := range feeds {
			t.Run(tt.name+"/"+how, func(t *testing.T) {
				p := genericFramework.parser("", "")
				fn(tt.output, p)
				res := &Result{Framework: "generic", Command: "make test", ExitCode: tt.exit, Output: tt.output}
				res.conclude(p.finish(tt.exit, false), genericFramework, false, 0, 0)
				if res.Outcome != tt.want || res.Counts.Passed != tt.passed {
					t.Errorf("outcome %s, %d passed; want %s, %d passed\n%s", res.Outcome, res.Counts.Passed, tt.want, tt.passed, res.Summary)
				}
			})
		}
	}
}

func TestDetectCommand(t *testing.T) {
	tests := []struct{ cmd, want string }{
		{"python3 -m unittest discover -s tests", "unittest"},
		{".venv/bin/python -m unittest -v", "unittest"},
		{"nose2 -v", "unittest"},
		{"nose2-3", "unittest"},
		{"python manage.py test app", "unittest"},
		{"cd web && django-admin test --settings=s", "unittest"},
		{"python3 -m pytest -x", "pytest"},
		{"pytest", "pytest"},
		{"go test ./...", "go"},
		{"cargo +nightly test", "cargo"},
		{"npx --no -- jest src", "jest"},
		{"npx vitest run", "vitest"},
		{"make test", ""},
		{"npm test", ""},
		{"go test ./... && pytest", ""}, // two runners: the project decides
		{"python3 -m unittester", ""},
	}
	for _, tt := range tests {
		if got := DetectCommand(tt.cmd); got != tt.want {
			t.Errorf("DetectCommand(%q) = %q, want %q", tt.cmd, got, tt.want)
		}
	}
}

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

package testrun

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Frameworks lists the names a plan may give, besides "auto".
var Frameworks = []string{"go", "pytest", "unittest", "cargo", "jest", "vitest", "tap", "generic"}

// report is what a parser made of a run.
type report struct {
	counts      Counts
	failures    []Failure
	buildErrors []BuildError
	buildFailed bool   // a build failed, even when no error line was recognised
	collection  bool   // test files could not be loaded
	structured  bool   // the runner's own report was read, so counts are real
	toolError   string // the runner failed as a tool (usage, internal error)
	ownTimeout  bool   // the framework's own timeout ended the run
}

func (r *report) fail(f Failure) {
	if len(r.failures) < maxFailures {
		r.failures = append(r.failures, f)
	}
}

func (r *report) buildError(e BuildError) {
	for _, o := range r.buildErrors {
		if o == e { // cargo and go report one error once per build of a package
			return
		}
	}
	if len(r.buildErrors) < maxBuildErrors {
		r.buildErrors = append(r.buildErrors, e)
	}
}

// parser reads one run. Calls are serialised by the caller.
type parser interface {
	stdout(line string)
	stderr(line string)
	// finish is called once the process ended; killed is true when a
	// timeout or a cancellation stopped it.
	finish(exitCode int, killed bool) *report
}

// tailer is a parser that renders the end of the output better than the
// raw lines (go test's JSON events, as text).
type tailer interface{ tail() []string }

// framework is what differs from one runner to the next.
type framework struct {
	name string
	// command returns the command to run when the plan gives none, or why
	// there is none (the tool is not installed).
	command func(dir string) (cmd, missing string)
	// prepare adds what makes the runner write a machine-readable report
	// into tmp: flags in the command, or variables in env.
	prepare func(cmd, tmp string, env []string) (string, []string)
	parser  func(dir, tmp string) parser
	// rewrite, when set, changes what the command does (cargo's
	// --no-fail-fast, vitest's run instead of watch mode). Unlike
	// prepare's report flags, this is part of the command the result
	// records: a user rerunning it gets the same run.
	rewrite func(cmd string) string
}

func lookup(name string) *framework {
	switch name {
	case "go":
		return goFramework
	case "pytest":
		return pytestFramework
	case "unittest":
		return unittestFramework
	case "cargo":
		return cargoFramework
	case "jest":
		return jestFramework
	case "vitest":
		return vitestFramework
	case "tap":
		return tapFramework
	case "generic":
		return genericFramework
	}
	return nil
}

var (
	djangoTest = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:^|[\s/;&|(])(?:manage\.py|django-admin)\s+test(?:$|[\s;&|)])`)
	})
)

// DetectCommand names the framework a test command runs, when it names
// exactly one runner: ` + "`python -m unittest`" + `, nose2, Django's manage.py
// test, pytest, go test, cargo test, jest, vitest. A command that names
// none (make test, npm test) or several returns "", and the project's
// files decide (Detect).
func DetectCommand(cmd string) string {
	found := map[string]bool{}
	for _, w := range []string{"unittest", "nose2", "nose2-3"} {
		if containsWord(cmd, w) {
			found["unittest"] = true
		}
	}
	if djangoTest().MatchString(cmd) {
		found["unittest"] = true
	}
	if containsWord(cmd, "pytest") || containsWord(cmd, "py.test") || containsWord(cmd, "pytest-3") {
		found["pytest"] = true
	}
	if goTestCmd().MatchString(cmd) {
		found["go"] = true
	}
	if cargoTestCmd().MatchString(cmd) {
		found["cargo"] = true
	}
	for _, w := range []string{"jest", "vitest"} {
		if containsWord(cmd, w) {
			found[w] = true
		}
	}
	if len(found) != 1 {
		return ""
	}
	for name := range found {
		return name
	}
	return ""
}

// Detect names the framework of the project in dir from its files: go.mod,
// Cargo.toml, pytest's config files, package.json's test script and
// dependencies, then Python test files. A directory inside a project (a
// package of a Go module, a crate of a workspace) is looked up in its
// parents too. It returns "generic" when nothing matches.
func Detect(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	for d := abs; ; {
		if fw := detectIn(d, d == abs); fw != "" {
			return fw
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "generic"
		}
		d = parent
	}
}

// detectIn looks at one directory; test files count only in the first.
func detectIn(dir string, own bool) string {
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	switch {
	case has("go.mod"):
		return "go"
	case has("Cargo.toml"):
		return "cargo"
	case has("pytest.ini") || has("conftest.py") ||
		fileContains(filepath.Join(dir, "pyproject.toml"), "[tool.pytest") ||
		fileContains(filepath.Join(dir, "setup.cfg"), "[tool:pytest]") ||
		fileContains(filepath.Join(dir, "tox.ini"), "[pytest]"):
		return "pytest"
	}
	if fw := detectNode(dir); fw != "" {
		return fw
	}
	if !own {
		return ""
	}
	for _, pat := range []string{"test_*.py", "*_test.py", "tests/test_*.py", "tests/*_test.py", "test/test_*.py"} {
		if m, _ := filepath.Glob(filepath.Join(dir, pat)); len(m) > 0 {
			return "pytest"
		}
	}
	return ""
}

// detectNode reads package.json: a test script naming a runner decides, then
// the dependencies, then config files.
func detectNode(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return ""
	}
	var pkg struct {
		Scripts         map[string]string `json:"scripts"`
		Dependencies    map[string]any    `json:"dependencies"`
		DevDependencies map[string]any    `json:"devDependencies"`
	}
	if json.Unmarshal(b, &pkg) != nil {
		return ""
	}
	script := pkg.Scripts["test"]
	switch {
	case containsWord(script, "vitest"):
		return "vitest"
	case containsWord(script, "jest"):
		return "jest"
	case strings.Contains(script, "node --test"):
		return "tap"
	}
	for _, name := range []string{"vitest", "jest"} {
		if pkg.DevDependencies[name] != nil || pkg.Dependencies[name] != nil {
			return name
		}
	}
	for _, name := range []string{"vitest", "jest"} {
		if m, _ := filepath.Glob(filepath.Join(dir, name+".config.*")); len(m) > 0 {
			return name
		}
	}
	return ""
}

func fileContains(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(b), s)
}

// findUp looks for name in dir and its parents (node_modules/.bin/jest of a
// monorepo's root, a go.mod above a package).
func findUp(dir, name string) string {
	for d := dir; ; {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

func hasBinary(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// setEnv returns env with name set to value, replacing earlier values.
func setEnv(env []string, name, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, e := range env {
		if !strings.HasPrefix(e, name+"=") {
			out = append(out, e)
		}
	}
	return append(out, name+"="+value)
}

func getEnv(env []string, name string) string {
	v := ""
	for _, e := range env {
		if rest, ok := strings.CutPrefix(e, name+"="); ok {
			v = rest // the last one wins, as in exec
		}
	}
	return v
}

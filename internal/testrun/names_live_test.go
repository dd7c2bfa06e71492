//go:build unix

package testrun

import (
	"path"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/testutil/testtool"
)

// The tests in this file run the real runners on failing test files whose
// names hold what a file system allows and a reader of "file:line" may
// trip on, and check each failure keeps its file, line and test name.

// oddNames are the stems of the test files; stem is the file's name
// before the runner's suffix, a path for the deep one.
var oddNames = []struct{ name, stem string }{
	{"colon", "a:12:b"}, // reads as file "a", line 12, to a careless reader
	{"double colon", "a::b"},
	{"space", "a b"},
	{"comma", "a,b"},
	{"parentheses", "a(b)"},
	{"quote", "a'b"},
	{"non-ASCII", "a_été_日本"},
	{"leading dash", "-a"},
	{"deep", "d1/d2/d3/d4/d5/d6/a"},
}

// oddWant is a failure a run must report.
type oddWant struct {
	id, file string
	line     int
	kind     string
}

// checkOdd checks the failures of res against want, one subtest per name;
// names the runner refuses are in refused, with the reason.
func checkOdd(t *testing.T, res *Result, want func(name, stem string) []oddWant, refused map[string]string) {
	t.Helper()
	if res.Outcome != Failed {
		t.Fatalf("outcome %s, want failed\n%s\noutput:\n%s", res.Outcome, res.Summary, res.Output)
	}
	byID := map[string]Failure{}
	for _, f := range res.Failures {
		byID[f.ID] = f
	}
	for _, n := range oddNames {
		t.Run(n.name, func(t *testing.T) {
			if why := refused[n.name]; why != "" {
				t.Skip(why)
			}
			for _, w := range want(n.name, n.stem) {
				f, ok := byID[w.id]
				if !ok {
					var ids []string
					for id := range byID {
						ids = append(ids, id)
					}
					t.Fatalf("no failure %q among %q", w.id, ids)
				}
				if f.File != w.file || f.Line != w.line {
					t.Errorf("%s at %q:%d, want %q:%d", w.id, f.File, f.Line, w.file, w.line)
				}
				if w.kind != "" && f.Kind != w.kind {
					t.Errorf("%s: kind %s, want %s", w.id, f.Kind, w.kind)
				}
			}
		})
	}
}

// oddFiles writes one test file per name the runner accepts; file gives
// its path, content its text.
func oddFiles(refused map[string]string, file func(i int, stem string) string, content func(i int, stem string) string) map[string]string {
	files := map[string]string{}
	for i, n := range oddNames {
		if refused[n.name] == "" {
			files[file(i, n.stem)] = content(i, n.stem)
		}
	}
	return files
}

func TestOddNamesGoLive(t *testing.T) {
	t.Parallel()
	need(t, "go", "install Go")
	refused := map[string]string{"leading dash": `go refuses it: invalid input file name "-a_test.go"`}
	// one package per name, so a name's directory holds only its file
	file := func(i int, stem string) string { return "n" + string(rune('0'+i)) + "/" + stem + "_test.go" }
	files := oddFiles(refused, file, func(int, string) string {
		return "package p\n\nimport \"testing\"\n\nfunc TestOdd(t *testing.T) {\n\tt.Error(\"boom\")\n}\n\nfunc TestPanic(t *testing.T) {\n\tpanic(\"bang\")\n}\n"
	})
	files["go.mod"] = "module example.com/odd\n\ngo 1.22\n"
	dir := project(t, files)
	res, _ := run(t, Options{Dir: dir, Command: "go test ./..."})
	checkOdd(t, res, func(name, stem string) []oddWant {
		i := 0
		for i = range oddNames {
			if oddNames[i].name == name {
				break
			}
		}
		f := file(i, stem)
		pkg := "example.com/odd/" + path.Dir(f)
		return []oddWant{{pkg + ".TestOdd", f, 6, KindFail}, {pkg + ".TestPanic", f, 10, KindPanic}}
	}, refused)
}

func TestOddNamesPytestLive(t *testing.T) {
	t.Parallel()
	cmd, missing := pytestCommand(t.TempDir())
	testtool.Need(t, "pytest", missing == "", "apt-get install python3-pytest, which .ci/install does")
	file := func(_ int, stem string) string { return stem + "_test.py" }
	dir := project(t, oddFiles(nil, file, func(int, string) string { return "def test_odd():\n    assert 1 == 2\n" }))
	res, _ := run(t, Options{Dir: dir, Framework: "pytest", Command: cmd + " -p no:cacheprovider"})
	checkOdd(t, res, func(_, stem string) []oddWant {
		return []oddWant{{file(0, stem) + "::test_odd", file(0, stem), 2, KindFail}}
	}, nil)
}

// unittestOdd is a failing unittest module.
const unittestOdd = "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_odd(self):\n        self.assertEqual(1, 2)\n"

func unittestOddWant(_, stem string) []oddWant {
	return []oddWant{{strings.ReplaceAll(stem, "/", ".") + "_test.T.test_odd", stem + "_test.py", 6, KindFail}}
}

func TestOddNamesUnittestLive(t *testing.T) {
	t.Parallel()
	need(t, "python3", "apt-get install python3, which .ci/install does")
	file := func(_ int, stem string) string { return stem + "_test.py" }
	files := oddFiles(nil, file, func(int, string) string { return unittestOdd })
	dir := project(t, files)
	// Discovery skips a module whose name is no identifier; given by path,
	// any file is run.
	var args []string
	for name := range files {
		args = append(args, shellQuote(name))
	}
	res, _ := run(t, Options{Dir: dir, Command: "python3 -m unittest -- " + strings.Join(args, " ")})
	checkOdd(t, res, unittestOddWant, nil)
}

func TestOddNamesDjangoLive(t *testing.T) {
	t.Parallel()
	django := testtool.LookPath(t, "django-admin", "apt-get install python3-django, which .ci/install does")
	// Django finds tests only by discovery, which skips a module whose name
	// is no identifier.
	refused := map[string]string{}
	for _, n := range oddNames {
		if n.name != "non-ASCII" && n.name != "deep" {
			refused[n.name] = "unittest discovery (Django's) skips a module named " + n.stem + "_test"
		}
	}
	file := func(_ int, stem string) string { return stem + "_test.py" }
	files := oddFiles(refused, file, func(int, string) string { return unittestOdd })
	files["settings.py"] = "SECRET_KEY = 'test'\nINSTALLED_APPS = []\nDATABASES = {}\n"
	for d := "d1/d2/d3/d4/d5/d6"; d != "."; d = path.Dir(d) {
		files[d+"/__init__.py"] = ""
	}
	dir := project(t, files)
	res, _ := run(t, Options{Dir: dir, Command: "PYTHONPATH=. " + django + " test --settings=settings -p '*_test.py'"})
	checkOdd(t, res, unittestOddWant, refused)
}

// jsOdd is a failing test named after its file's stem, so the test's name
// is as odd as the file's.
func jsOdd(imports string) func(int, string) string {
	return func(_ int, stem string) string {
		return imports + "test(" + jsString("odd "+stem) + ", () => {\n  expect(1).toBe(2);\n});\n"
	}
}

func jsString(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

func TestOddNamesJestLive(t *testing.T) {
	t.Parallel()
	modules := nodeModules(t, "jest")
	file := func(_ int, stem string) string { return stem + ".test.js" }
	files := oddFiles(nil, file, jsOdd(""))
	files["package.json"] = `{"name": "odd", "private": true, "devDependencies": {"jest": "*"}}`
	dir := nodeProject(t, modules, files)
	res, _ := run(t, Options{Dir: dir, Command: "npx --no -- jest"})
	checkOdd(t, res, func(_, stem string) []oddWant {
		return []oddWant{{file(0, stem) + " > odd " + stem, file(0, stem), 2, KindFail}}
	}, nil)
}

func TestOddNamesVitestLive(t *testing.T) {
	t.Parallel()
	modules := nodeModules(t, "vitest")
	refused := map[string]string{
		"colon":        "vitest fails to load a file whose name holds ':'",
		"double colon": "vitest fails to load a file whose name holds ':'",
	}
	file := func(_ int, stem string) string { return stem + ".test.js" }
	files := oddFiles(refused, file, jsOdd("import { test, expect } from 'vitest';\n"))
	files["package.json"] = `{"name": "odd", "private": true, "type": "module"}`
	dir := nodeProject(t, modules, files)
	res, _ := run(t, Options{Dir: dir, Command: "npx --no -- vitest run"})
	checkOdd(t, res, func(_, stem string) []oddWant {
		return []oddWant{{file(0, stem) + " > odd " + stem, file(0, stem), 3, KindFail}}
	}, refused)
}

func TestOddNamesTapLive(t *testing.T) {
	t.Parallel()
	need(t, "node", "apt-get install nodejs, which .ci/install does")
	file := func(_ int, stem string) string { return stem + ".test.mjs" }
	files := oddFiles(nil, file, func(_ int, stem string) string {
		return "import test from 'node:test';\nimport assert from 'node:assert';\n" +
			"test(" + jsString("odd "+stem) + ", () => {\n  assert.strictEqual(1, 2);\n});\n"
	})
	dir := project(t, files)
	res, _ := run(t, Options{Dir: dir, Framework: "tap", Command: "node --test --test-reporter=tap"})
	checkOdd(t, res, func(_, stem string) []oddWant {
		return []oddWant{{"odd " + stem, file(0, stem), 4, KindFail}}
	}, nil)
}

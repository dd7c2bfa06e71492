package testrun

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPlaceReaders reads the "file:line" lines runners print, for files
// whose names hold colons, spaces and parentheses, with the run's
// directory at hand (where the longest existing name wins) and without it
// (where the rightmost line number followed by the message wins).
func TestPlaceReaders(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.go:12:b_test.go", "x_test.go", "a b_test.go", "c: d_test.go", "a.py:3:b_test.py", "p (1)/s.test.js", "q.test.js"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type got = placeGot
	tests := []struct {
		name   string
		read   func(l string, exists func(string) bool) (got, bool)
		line   string
		seeDir bool
		want   got // file "" when nothing is read
	}{
		// go test's t.Error line
		{"go: ambiguous, the file exists", goRead, "    a.go:12:b_test.go:3: boom", true, got{"a.go:12:b_test.go", 3, "boom"}},
		{"go: ambiguous, no directory", goRead, "    a.go:12:b_test.go:3: boom", false, got{"a.go:12:b_test.go", 3, "boom"}},
		{"go: a place in the message", goRead, "    x_test.go:7: see y.go:5: bad", true, got{"x_test.go", 7, "see y.go:5: bad"}},
		{"go: a place in the message, no directory", goRead, "    x_test.go:7: see y.go:5: bad", false, got{"x_test.go", 7, "see y.go:5: bad"}},
		{"go: a space", goRead, "    a b_test.go:6: boom", false, got{"a b_test.go", 6, "boom"}},
		{"go: ': ' in the name, the file exists", goRead, "    c: d_test.go:4: boom", true, got{"c: d_test.go", 4, "boom"}},
		{"go: ': ' in the name, no directory", goRead, "    c: d_test.go:4: boom", false, got{}},
		{"go: not indented", goRead, "x_test.go:7: boom", true, got{}},
		// a goroutine trace's frame
		{"go frame", frameRead, "\t" + dir + "/a b_test.go:10 +0x1d", true, got{dir + "/a b_test.go", 10, ""}},
		{"go frame with colons", frameRead, "\t" + dir + "/a.go:12:b_test.go:10 +0x1d", true, got{dir + "/a.go:12:b_test.go", 10, ""}},
		// pytest's location line
		{"pytest: ambiguous, the file exists", pyRead, "a.py:3:b_test.py:2: AssertionError", true, got{"a.py:3:b_test.py", 2, "AssertionError"}},
		{"pytest: ambiguous, no directory", pyRead, "a.py:3:b_test.py:2: AssertionError", false, got{"a.py:3:b_test.py", 2, "AssertionError"}},
		{"pytest: a traceback entry", pyRead, "a b_test.py:1: in <module>", false, got{"a b_test.py", 1, "in <module>"}},
		{"pytest: an exception line is no place", pyRead, "E   x.py:3: bad", true, got{}},
		{"pytest: indented source is no place", pyRead, "    s = 'x.py:3: bad'", true, got{}},
		// jest, vitest and node's stack frames
		{"js: parentheses in the path", jsRead, "at Object.<anonymous> (" + dir + "/p (1)/s.test.js:4:23)", true, got{dir + "/p (1)/s.test.js", 4, ""}},
		{"js: a file:// URL", jsRead, "at file://" + dir + "/p%20(1)/s.test.js:5:3", true, got{dir + "/p (1)/s.test.js", 5, ""}},
		{"js: relative, vitest's", jsRead, "❯ p (1)/s.test.js:5:23", true, got{"p (1)/s.test.js", 5, ""}},
		{"js: ordinary, no directory", jsRead, "at Object.toBe (/abs/q.test.js:4:23)", false, got{"/abs/q.test.js", 4, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var exists func(string) bool
			if tt.seeDir {
				exists = existsIn(dir)
			}
			g, ok := tt.read(tt.line, exists)
			if !ok {
				g = got{}
			}
			if g != tt.want {
				t.Errorf("%q read as %+v, want %+v", tt.line, g, tt.want)
			}
		})
	}
}

type placeGot = struct {
	file string
	line int
	rest string
}

func goRead(l string, exists func(string) bool) (placeGot, bool) {
	f, n, msg, ok := goLog(l, exists)
	return placeGot{f, n, msg}, ok
}

func frameRead(l string, _ func(string) bool) (placeGot, bool) {
	f, n, ok := goFrameAt(l)
	return placeGot{f, n, ""}, ok
}

func pyRead(l string, exists func(string) bool) (placeGot, bool) {
	f, n, what, ok := pyLocation(l, exists)
	return placeGot{f, n, what}, ok
}

func jsRead(l string, exists func(string) bool) (placeGot, bool) {
	f, n, ok := jsFrame(l, exists, false)
	return placeGot{f, n, ""}, ok
}

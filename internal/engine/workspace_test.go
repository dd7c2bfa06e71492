package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// files() lists the workdir's files matching a glob, sorted and
// relative, ** for any depth, .git and links out of the workdir left out;
// a bad argument is an error naming the call.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	for _, f := range []string{"b.go", "a.go", "src/x.go", "src/deep/y.go", "src/deep/z.txt", ".git/config.go", "README.md"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644)
	}
	os.WriteFile(filepath.Join(outside, "secret.go"), []byte("s"), 0o644)
	os.Symlink(filepath.Join(outside, "secret.go"), filepath.Join(dir, "src/leak.go"))
	os.Symlink("x.go", filepath.Join(dir, "src/inside.go"))
	for _, tc := range []struct{ pattern, want, err string }{
		{"*.go", "a.go b.go", ""},
		{"src/**/*.go", "src/deep/y.go src/inside.go src/x.go", ""},
		{"**/*.go", "a.go b.go src/deep/y.go src/inside.go src/x.go", ""},
		{"nothing/*", "", ""},
		{"../*", "", `files("../*"): ".." leaves the workdir`},
		{"/etc/*", "", `files("/etc/*"): an absolute path`},
		{"[", "", `files("["): a bad pattern`},
	} {
		got, err := engine.Files(dir, tc.pattern)
		var names []string
		for _, g := range got {
			names = append(names, g.(string))
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("files(%q): error %v, want %q", tc.pattern, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(names, " ") != tc.want {
			t.Errorf("files(%q) = %q, %v; want %q", tc.pattern, names, err, tc.want)
		}
	}
}

// read_file() reads a file of the workdir and nothing else: not one
// outside it by "..", an absolute path or a symbolic link, nor one past
// its size limit.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "leak"))
	os.WriteFile(filepath.Join(dir, "big"), make([]byte, 2<<20), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	for _, tc := range []struct{ path, want, err string }{
		{"a.txt", "hello", ""},
		{"./sub/../a.txt", "", `".." leaves the workdir`},
		{"../" + filepath.Base(outside) + "/secret", "", `".." leaves the workdir`},
		{filepath.Join(outside, "secret"), "", "an absolute path"},
		{"leak", "", "a symbolic link out of the workdir"},
		{"big", "", "is larger than 1 MiB"},
		{"sub", "", "not a regular file"},
		{"missing", "", "no such file"},
	} {
		got, err := engine.ReadFile(dir, tc.path)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("read_file(%q): error %v, want %q", tc.path, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("read_file(%q) = %q, %v", tc.path, got, err)
		}
	}
}

// In a plan, files() and read_file() work in a step's fields (a for_each
// list, a template), and each call is recorded with what it gave.
func TestWorkspaceFunctionsRecorded(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "one.txt"), []byte("1"), 0o644)
	os.WriteFile(filepath.Join(dir, "two.txt"), []byte("2"), 0o644)
	src := `
version: 1
steps:
  - label: each
    type: echo
    for_each: files("*.txt")
    text: "${{ item }}=${{ read_file(item) }}"
  - {label: bad, type: echo, text: "${{ read_file('../x') }}", continue_on_error: true}
`
	prog, err := engine.Compile("plan.yaml", []byte(src), registry())
	if err != nil {
		t.Fatal(err)
	}
	b := board.New(board.Run{ID: "test"})
	r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: dir}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, res := lastResult(t, b, "each")
	if got := res["output"].([]any); len(got) != 2 || got[0] != "one.txt=1" || got[1] != "two.txt=2" {
		t.Errorf("each: %v", got)
	}
	if rec, _ := lastResult(t, b, "bad"); !strings.Contains(rec.Error, `read_file("../x"): ".." leaves the workdir`) {
		t.Errorf("bad: %q", rec.Error)
	}
	var calls []string
	for _, rec := range b.Recordings() {
		if rec.Kind == engine.KindWorkspace {
			calls = append(calls, rec.Label+" "+string(rec.Request)+" "+string(rec.Response))
		}
	}
	want := []string{
		`each {"func":"files","arg":"*.txt"} {"value":["one.txt","two.txt"]}`,
		`each[0] {"func":"read_file","arg":"one.txt"} {"value":"1"}`,
		`each[1] {"func":"read_file","arg":"two.txt"} {"value":"2"}`,
		`bad {"func":"read_file","arg":"../x"} {"error":"read_file(\"../x\"): \"..\" leaves the workdir; give a path inside it"}`,
	}
	got := strings.Join(calls, "\n")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("recordings lack %s; have\n%s", w, got)
		}
	}
}

package proc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/testutil/testtool"
)

// TestDirectAsSh: a script started without a shell ends as `sh -c` would
// end it: the same exit status, output and messages, the same environment
// (names sh drops dropped, PWD as sh sets it), a program found on the
// step's PATH, and sh's answer for what it cannot start.
func TestDirectAsSh(t *testing.T) {
	if sh, _ := filepath.EvalSymlinks("/bin/sh"); filepath.Base(sh) != "dash" {
		testtool.Missing(t, "dash as /bin/sh", "the start without a shell does what dash does; install dash as /bin/sh")
	}
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	write := func(name, text string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("noshebang", "echo as a script; exit 4\n", 0o755)
	write("notexec", "#!/bin/sh\necho never\n", 0o644)
	write("hello", "#!/bin/sh\necho hello \"$@\"; echo err >&2; exit 5\n", 0o755)
	path := "PATH=" + bin + ":/usr/bin:/bin"
	base := []string{path, "HOME=/nowhere", "A-B=dropped", "BASH_FUNC_f%%=() { :; }", "LANG=C"}
	tests := []struct {
		name, script string
		env          []string
		dir          string
	}{
		{"true", "true", base, dir},
		{"false", "false", base, dir},
		{"a program on PATH", "hello 'a  b' c", base, dir},
		{"environment, PWD not the dir", "env", append(base, "PWD=/"), dir},
		{"environment, PWD the dir through a link", "env", append(base, "PWD="+link), link},
		{"environment, in a link without PWD", "env", base, link},
		{"environment, PATH set twice", "env", append(base, "PATH=/bin"), dir},
		{"no PATH", "env", []string{"X=1"}, dir},
		{"not found", "no-such-program-c38", base, dir},
		{"not executable", "notexec", base, dir},
		{"not executable by path", "./bin/notexec", base, dir},
		{"no #! line", "noshebang", base, dir},
		{"killed by its own signal", "sh -c 'kill -TERM $$'", base, dir},
		{"aborted", "sh -c 'kill -ABRT $$'", base, dir},
		{"ended by SIGPIPE: no message", "sh -c 'kill -PIPE $$'", base, dir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argv, ok := Argv(tt.script)
			if !ok {
				t.Fatalf("%q does not start without a shell", tt.script)
			}
			viaSh := run(t, Spec{Script: tt.script, Env: tt.env, Dir: tt.dir})
			direct := run(t, Spec{Script: tt.script, Direct: argv, Env: tt.env, Dir: tt.dir})
			if direct.ExitCode != viaSh.ExitCode || direct.Signal != viaSh.Signal {
				t.Errorf("exit %d %q, sh -c: %d %q", direct.ExitCode, direct.Signal, viaSh.ExitCode, viaSh.Signal)
			}
			if a, b := envLines(direct.Stdout.Text), envLines(viaSh.Stdout.Text); a != b {
				t.Errorf("stdout\n%s\nsh -c:\n%s", a, b)
			}
			if direct.Stderr.Text != viaSh.Stderr.Text {
				t.Errorf("stderr %q, sh -c: %q", direct.Stderr.Text, viaSh.Stderr.Text)
			}
		})
	}
}

// envLines is output with lines sorted (sh lists its environment in its
// own order) and the token, new for each process, left out.
func envLines(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	lines = slices.DeleteFunc(lines, func(l string) bool { return strings.HasPrefix(l, TokenEnv+"=") })
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProgramInAClosedDirectory: as root, a step's program installed
// below a directory only root may search (npm's prefix or nvm under
// /root) runs: as a file of its own, as an npm CLI that loads a sibling
// package, as a script whose `#!/usr/bin/env` interpreter is installed
// there too, and with reads narrowed to other paths. A read path there
// reads. What else lies in that directory stays out of sight.
func TestProgramInAClosedDirectory(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("an ordinary user's sandbox reaches what the user reaches")
	}
	closed := t.TempDir() // below a 0700 directory: the mapped root cannot search it
	files := map[string]string{
		"bin/hello":                         "#!/bin/sh\necho hello\n",
		"npm/node_modules/tool/cli.sh":      "#!/bin/sh\ncat \"$(dirname \"$(readlink -f \"$0\")\")/../tool-linux/data\"\n",
		"npm/node_modules/tool-linux/data":  "platform\n",
		"interp/bin/myinterp":               "#!/bin/sh\nexec /bin/sh \"$1\"\n",
		"prog/run":                          "#!/usr/bin/env myinterp\necho through env\n",
		"data/file.txt":                     "read me\n",
		"secret.txt":                        "secret\n",
		"bin/peek":                          "#!/bin/sh\ncat " + filepath.Join(closed, "secret.txt") + " 2>/dev/null || echo unseen\n",
		"npm/node_modules/tool/unused.json": "{}\n",
	}
	for name, body := range files {
		p := filepath.Join(closed, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(closed, "npm/node_modules/.bin"), 0o755)
	if err := os.Symlink("../tool/cli.sh", filepath.Join(closed, "npm/node_modules/.bin/tool")); err != nil {
		t.Fatal(err)
	}
	landlock := kernelProbe().landlock > 0
	for _, tc := range []struct {
		name, prog string
		args       []string
		read       []string
		path       string
		want       string
	}{
		{name: "a program of its own", prog: "bin/hello", want: "hello\n"},
		{name: "an npm CLI through its link", prog: "npm/node_modules/.bin/tool", want: "platform\n"},
		{name: "a script whose env interpreter is there too", prog: "prog/run", path: "interp/bin", want: "through env\n"},
		{name: "a read path there", prog: "/bin/cat", args: []string{"data/file.txt"}, read: []string{"data"}, want: "read me\n"},
		{name: "reads narrowed elsewhere", prog: "bin/hello", read: []string{"data"}, want: "hello\n"},
		{name: "the rest of the directory unseen", prog: "bin/peek", want: "unseen\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.read != nil && !landlock {
				t.Skip("reads are narrowed with Landlock, which this kernel lacks")
			}
			prog := tc.prog
			if !filepath.IsAbs(prog) {
				prog = filepath.Join(closed, prog)
			}
			var args []string
			for _, a := range tc.args {
				args = append(args, filepath.Join(closed, a))
			}
			var read []string
			for _, r := range tc.read {
				if !filepath.IsAbs(r) {
					r = filepath.Join(closed, r)
				}
				read = append(read, r)
			}
			env := os.Environ()
			if tc.path != "" {
				env = setEnv(env, "PATH", filepath.Join(closed, tc.path)+":/usr/bin:/bin")
			}
			work := t.TempDir()
			cmd := exec.Command(prog, args...)
			cmd.Dir, cmd.Env = work, env
			s, err := Wrap(cmd, Policy{Write: []string{work}, Read: read})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var out, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &stderr
			err = cmd.Start()
			s.Started()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			code, _, err := s.Finish(cmd.ProcessState)
			if err != nil || code != 0 || out.String() != tc.want {
				t.Errorf("exit %d, %v, output %q, want %q; stderr:\n%s", code, err, out.String(), tc.want, strings.TrimSpace(stderr.String()))
			}
		})
	}
}

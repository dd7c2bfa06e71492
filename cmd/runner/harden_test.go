package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// walkPlan's step walks to runner's process (its parent) and copies what
// it finds there to a drop directory outside the run, where no masking
// reaches: the environment block, and whether /proc/PPID/mem opens.
const walkPlan = `version: 1
secrets: [DEPLOY_TOKEN]
steps:
  - label: walk
    type: command
    run: |
      cat /proc/$PPID/environ > "$DROP/environ" 2> "$DROP/environ.err" || true
      if (true < /proc/$PPID/mem) 2> "$DROP/mem.err"; then echo opened > "$DROP/mem"; fi
      (tr '\0' '\n' < /proc/$PPID/environ) 2>/dev/null | rev || true
`

// TestStepCannotReadRunnersEnvironment runs the real binary, as root and
// as an unprivileged user, with a plan secret and an API key in its
// environment, and a step that reads /proc/<runner>/environ and opens
// /proc/<runner>/mem. As another user both are refused (runner is not
// dumpable); as root the block reads, but blank (runner scrubbed it). On
// the old code the step copied both secrets in clear.
func TestStepCannotReadRunnersEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name string
		uid  int
	}{{"as nobody", 65534}, {"as root", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			if os.Getuid() != 0 {
				t.Skip("needs root to run runner as another user")
			}
			dir := t.TempDir()
			drop := filepath.Join(dir, "drop")
			work := filepath.Join(dir, "work")
			bin := filepath.Join(dir, "runner")
			data, err := os.ReadFile(binary)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{drop, work} {
				os.Mkdir(d, 0o755)
			}
			os.WriteFile(bin, data, 0o755)
			os.WriteFile(filepath.Join(work, "plan.yaml"), []byte(walkPlan), 0o644)
			for _, p := range []string{filepath.Dir(dir), dir, drop, work} {
				os.Chmod(p, 0o777)
			}
			cmd := exec.Command(bin, "run", "plan.yaml", "-q")
			cmd.Dir = work
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + work, "DROP=" + drop,
				"DEPLOY_TOKEN=" + leakToken, "OPENAI_API_KEY=" + leakKey}
			if tc.uid != 0 {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(tc.uid), Gid: uint32(tc.uid)}}
			}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("runner: %v\n%s", err, out.String())
			}
			environ, _ := os.ReadFile(filepath.Join(drop, "environ"))
			environErr, _ := os.ReadFile(filepath.Join(drop, "environ.err"))
			memErr, _ := os.ReadFile(filepath.Join(drop, "mem.err"))
			for _, s := range []string{leakToken, leakKey} {
				if bytes.Contains(environ, []byte(s)) {
					t.Errorf("the step read %q from /proc/<runner>/environ", s)
				}
			}
			if tc.uid != 0 {
				if !strings.Contains(string(environErr), "Permission denied") {
					t.Errorf("reading /proc/<runner>/environ as uid %d: want Permission denied, got %q (read %d bytes)", tc.uid, environErr, len(environ))
				}
				if _, err := os.Stat(filepath.Join(drop, "mem")); err == nil || !strings.Contains(string(memErr), "Permission denied") {
					t.Errorf("opening /proc/<runner>/mem as uid %d: want Permission denied, got %q", tc.uid, memErr)
				}
			} else if len(environ) == 0 || len(bytes.Trim(environ, "\x00")) != 0 {
				t.Errorf("as root the block should read as zero bytes, got %d bytes: %q", len(environ), environ)
			}
			filepath.WalkDir(work, func(path string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					b, _ := os.ReadFile(path)
					checkNoSecret(t, path, string(b))
					checkNoSecret(t, path+" (reversed)", reverse(string(b)))
				}
				return nil
			})
		})
	}
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

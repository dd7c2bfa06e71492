package temporal

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A command step a worker runs cannot read the worker's secrets: the
// worker blanks its environment block and is not dumpable (boot.Start),
// so /proc/<worker>/environ shows nothing to a reader that may read it
// (root) and /proc/<worker>/environ and /proc/<worker>/mem are refused to
// anyone else. The worker runs as another user when the test is root (as
// a worker runs as a service's user), and as this user otherwise.
func TestDevServerStepCannotReadWorkersEnvironment(t *testing.T) {
	const token, key = "wkr-Token-77123", "sk-worker-Key-40517"
	c := newCluster(t)
	cases := []struct {
		name string
		uid  int
	}{{"as this user", os.Getuid()}}
	if os.Getuid() == 0 {
		cases = append(cases, struct {
			name string
			uid  int
		}{"as nobody", 65534})
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			drop, blobs, workRoot, home := filepath.Join(dir, "drop"), filepath.Join(dir, "blobs"), filepath.Join(dir, "work"), filepath.Join(dir, "home")
			bin := filepath.Join(dir, "runner-temporal")
			data, err := os.ReadFile(c.rt)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(bin, data, 0o755)
			for _, d := range []string{drop, blobs, workRoot, home} {
				os.Mkdir(d, 0o777)
			}
			for _, p := range []string{filepath.Dir(dir), dir, drop, blobs, workRoot, home} {
				os.Chmod(p, 0o777)
			}
			queue := fmt.Sprintf("%s-harden-%d", c.queue, i)
			w := exec.Command(bin, "worker", "--temporal", c.srv.hostPort, "--task-queue", queue, "--blobs", blobs,
				"--work-root", workRoot, "--log-format", "json")
			w.Dir = home
			w.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "DEPLOY_TOKEN=" + token, "OPENAI_API_KEY=" + key}
			if tc.uid != os.Getuid() {
				w.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(tc.uid), Gid: uint32(tc.uid)}}
			}
			wp := &proc{cmd: w, out: &syncBuffer{}}
			w.Stdout, w.Stderr = wp.out, wp.out
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				w.Process.Signal(syscall.SIGTERM)
				wp.wait(t, time.Minute)
			}()
			waitOutput(t, wp, "worker started", time.Minute)
			pid := w.Process.Pid
			plan := filepath.Join(home, "plan.yaml")
			os.WriteFile(plan, []byte(fmt.Sprintf(`version: 1
steps:
  - label: walk
    type: command
    run: |
      cat /proc/%[1]d/environ > %[2]s/environ 2> %[2]s/environ.err || true
      if (true < /proc/%[1]d/mem) 2> %[2]s/mem.err; then echo opened > %[2]s/mem; fi
`, pid, drop)), 0o644)
			// The client as the worker's user: both write the store.
			r := exec.Command(bin, "run", plan, "--temporal", c.srv.hostPort, "--task-queue", queue, "--blobs", blobs, "--out", filepath.Join(home, "bb.json"))
			r.Dir, r.Env, r.SysProcAttr = home, []string{"PATH=/usr/bin:/bin", "HOME=" + home}, w.SysProcAttr
			p := &proc{cmd: r, out: &syncBuffer{}}
			r.Stdout, r.Stderr = p.out, p.out
			if err := r.Start(); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(t, 2*time.Minute); code != 0 {
				t.Fatalf("run: exit %d\n%s\nworker:\n%s", code, p.out, wp.out)
			}
			environ, _ := os.ReadFile(filepath.Join(drop, "environ"))
			environErr, _ := os.ReadFile(filepath.Join(drop, "environ.err"))
			memErr, _ := os.ReadFile(filepath.Join(drop, "mem.err"))
			if _, err := os.Stat(filepath.Join(drop, "environ.err")); err != nil {
				t.Fatalf("the step did not run on the worker: %v\nworker:\n%s", err, wp.out)
			}
			for _, s := range []string{token, key} {
				if bytes.Contains(environ, []byte(s)) {
					t.Errorf("the step read %q from /proc/<worker>/environ", s)
				}
			}
			if tc.uid != 0 {
				if !strings.Contains(string(environErr), "Permission denied") {
					t.Errorf("reading /proc/<worker>/environ as uid %d: want Permission denied, got %q (read %d bytes)", tc.uid, environErr, len(environ))
				}
				if _, err := os.Stat(filepath.Join(drop, "mem")); err == nil || !strings.Contains(string(memErr), "Permission denied") {
					t.Errorf("opening /proc/<worker>/mem as uid %d: want Permission denied, got %q", tc.uid, memErr)
				}
			} else if len(environ) == 0 || len(bytes.Trim(environ, "\x00")) != 0 {
				t.Errorf("as root the block should read as zero bytes, got %d bytes: %q", len(environ), environ)
			}
		})
	}
}

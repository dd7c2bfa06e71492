package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
)

const chattyPlan = `version: 1
name: chatty
steps:
  - label: a
    type: command
    run: for i in $(seq 1 50); do echo line $i; done
  - label: b
    type: command
    run: sleep 0.3; seq 1 3000
  - label: c
    type: board
    op: write
    key: done
    value: "yes"
`

// A run whose output pipe closes (`runner run plan.yaml 2>&1 | head -1`,
// an ssh session that drops) goes on to the end and saves its board: it
// does not die of SIGPIPE mid-plan, leaving the run "running" and its
// socket behind.
func TestClosedOutputPipe(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"console, show-output", []string{"--log-format", "console", "--show-output"}},
		{"json logs", []string{"--log-format", "json", "--show-output"}},
		{"quiet", []string{"-q"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			plan := filepath.Join(dir, "plan.yaml")
			os.WriteFile(plan, []byte(chattyPlan), 0o600)
			bb := filepath.Join(dir, "bb.json")
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(binary, append([]string{"run", plan, "--out", bb}, c.args...)...)
			cmd.Dir = dir
			cmd.Stdout, cmd.Stderr = w, w
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			// Read one line, as head -1 does, then close the pipe. With
			// -q nothing comes before the end: close it at once.
			if c.args[0] != "-q" {
				if _, err := bufio.NewReader(r).ReadString('\n'); err != nil {
					t.Fatal(err)
				}
			}
			r.Close()
			err = cmd.Wait()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				t.Fatalf("runner died of %v", ws.Signal())
			}
			if err != nil {
				t.Fatalf("runner: %v", err)
			}
			b := load(t, bb)
			if st := b.Run().Status; st != board.StatusSucceeded {
				t.Errorf("status %q, want succeeded", st)
			}
			if _, ok := b.Get("done"); !ok {
				t.Error("the last step did not run")
			}
			if _, err := os.Stat(bb + ".sock"); !os.IsNotExist(err) {
				t.Errorf("the socket outlived the run: %v", err)
			}
		})
	}
}

// SIGHUP (the terminal or the ssh session went away) stops a run as
// Ctrl-C does: interrupted, saved, resumable, socket removed.
func TestHangupStopsAsInterrupted(t *testing.T) {
	wd := t.TempDir()
	bb := filepath.Join(wd, "bb.json")
	cmd, out, _ := startLive(t, wd, bb)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("exit %d, want %d (interrupted): %s", code, exitInterrupted, out)
	}
	if st := load(t, bb).Run().Status; st != board.StatusInterrupted {
		t.Errorf("status %q, want interrupted", st)
	}
	if _, err := os.Stat(bb + ".sock"); !os.IsNotExist(err) {
		t.Errorf("the socket outlived the run: %v", err)
	}
}

// Under umask 000 a run's directory is 0700 and its files 0600, and its
// socket is made inside a directory no other user may enter (beside the
// board when its directory is private, else in a fresh 0700 directory),
// so it is never reachable by others, even before its chmod.
func TestRunFilesArePrivate(t *testing.T) {
	for _, c := range []struct {
		name   string
		shared bool // --out into a directory everyone may write
	}{{"default run directory", false}, {"--out in a shared directory", true}} {
		t.Run(c.name, func(t *testing.T) {
			wd := t.TempDir()
			os.Chmod(wd, 0o777)
			args := "run " + testdata("live.yaml") + " -q --report"
			if c.shared {
				args += " --out " + filepath.Join(wd, "bb.json")
			}
			cmd := exec.Command("sh", "-c", "umask 000; exec "+binary+" "+args)
			cmd.Dir = wd
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill() })
			bb := filepath.Join(wd, "bb.json")
			deadline := time.Now().Add(30 * time.Second)
			for {
				if !c.shared {
					m, _ := filepath.Glob(filepath.Join(wd, ".runner", "runs", "*", "blackboard.json"))
					if len(m) == 1 {
						bb = m[0]
					}
				}
				if o, err := boardlock.ReadOwner(bb); err == nil && o.Socket != "" {
					checkPrivate(t, o.Socket)
					if c.shared && filepath.Dir(o.Socket) == wd {
						t.Errorf("socket %s in the shared directory", o.Socket)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the run never served its board: %s", out.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			os.WriteFile(filepath.Join(wd, "done"), nil, 0o600)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("run: %v %s", err, out.String())
			}
			if !c.shared {
				checkMode(t, filepath.Dir(bb), 0o700)
			}
			for _, f := range []string{bb, boardlock.LockPath(bb), filepath.Join(filepath.Dir(bb), "report.html"), filepath.Join(wd, "swarm-blackboard.md")} {
				checkMode(t, f, 0o600)
			}
			// A CLI write on the run no one owns now keeps them so.
			if r := runIn(t, wd, nil, nil, "board", bb, "put", "k", "v"); r.code != 0 {
				t.Fatalf("put: %s", r.stderr)
			}
			checkMode(t, board.JournalPath(bb), 0o600)
		})
	}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Error(err)
		return
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %o, want %o", path, got, want)
	}
}

// checkPrivate checks that sock's directory lets no one else in.
func checkPrivate(t *testing.T, sock string) {
	t.Helper()
	fi, err := os.Stat(filepath.Dir(sock))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("socket %s is in a directory of mode %o", sock, fi.Mode().Perm())
	}
}

//go:build unix

package proc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// setGroup makes the process the leader of a new process group, so one
// signal reaches it and everything it starts (unless they leave the group).
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends SIGTERM (or SIGKILL) to the whole group, and to the
// processes that left it but carry the step's token (a daemon that called
// setsid, a double fork). A stopped process would hold a SIGTERM pending
// forever, so it is continued too.
func signalGroup(g *group, kill bool) {
	pgid := g.cmd.Process.Pid
	sig := unix.SIGTERM
	if kill {
		sig = unix.SIGKILL
	}
	unix.Kill(-pgid, sig)
	if !kill {
		unix.Kill(-pgid, unix.SIGCONT)
	}
	_, escaped, _ := scan(pgid, g.token, g.since)
	for _, pid := range escaped {
		unix.Kill(pid, sig)
		if !kill {
			unix.Kill(pid, unix.SIGCONT)
		}
	}
}

// groupAlive reports whether a process of the step is still running: of
// its group, or one that left the group with its token. kill(2) also finds
// zombies, which linger for good where PID 1 does not reap (many
// containers), so a positive answer is checked in /proc where there is one.
func groupAlive(g *group) bool {
	pgid := g.cmd.Process.Pid
	err := unix.Kill(-pgid, 0)
	running, escaped, ok := scan(pgid, g.token, g.since)
	if !ok {
		return !errors.Is(err, unix.ESRCH)
	}
	return running || len(escaped) > 0
}

// exitStatus turns a wait status into an exit code and a signal name.
func exitStatus(ps *os.ProcessState) (int, string) {
	if ps == nil {
		return -1, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, unix.SignalName(ws.Signal())
	}
	return ps.ExitCode(), ""
}

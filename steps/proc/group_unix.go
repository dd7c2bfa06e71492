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

// signalGroup sends SIGTERM (or SIGKILL) to the whole group. A stopped
// process would hold a SIGTERM pending forever, so it is continued too.
func signalGroup(cmd *exec.Cmd, kill bool) {
	pgid := cmd.Process.Pid
	if kill {
		unix.Kill(-pgid, unix.SIGKILL)
		return
	}
	unix.Kill(-pgid, unix.SIGTERM)
	unix.Kill(-pgid, unix.SIGCONT)
}

// groupAlive reports whether a process of the group is still running.
// kill(2) also finds zombies, which linger for good where PID 1 does not
// reap (many containers), so a positive answer is checked further where
// the system lets us.
func groupAlive(cmd *exec.Cmd) bool {
	pgid := cmd.Process.Pid
	err := unix.Kill(-pgid, 0)
	if errors.Is(err, unix.ESRCH) {
		return false
	}
	if running, ok := groupRunning(pgid); ok {
		return running
	}
	return true
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

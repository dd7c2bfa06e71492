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

// signalGroup sends SIGTERM (or SIGKILL) to every process of the step: with
// a cgroup, each process in it (SIGKILL through cgroup.kill, which also
// reaches what forks meanwhile); without, its process group and the
// processes that left it but carry the step's token (a daemon that called
// setsid, a double fork), looked for in /proc only when one may have left
// (see escapesPossible). A stopped process would hold a SIGTERM pending
// forever, so it is continued too. Each process signalled is held by a
// pidfd until it has finished exiting.
func signalGroup(g *group, kill bool) {
	pgid := g.cmd.Process.Pid
	g.sig = unix.SIGTERM
	if kill {
		g.sig = unix.SIGKILL
	}
	if g.cg != nil {
		for _, pid := range g.cg.procs() {
			g.fds.track(pid)
			g.sent[pid] = g.sig
			if !kill {
				unix.Kill(pid, unix.SIGTERM)
				unix.Kill(pid, unix.SIGCONT)
			}
		}
		if kill {
			g.cg.kill()
		}
		return
	}
	unix.Kill(-pgid, g.sig)
	if !kill {
		unix.Kill(-pgid, unix.SIGCONT)
	}
	if escapesPossible() {
		_, escaped, _ := scan(pgid, g.token, g.since)
		g.signalEscaped(escaped)
	}
}

// signalEscaped sends the stop's current signal to processes found outside
// the group.
func (g *group) signalEscaped(pids []int) {
	for _, pid := range pids {
		if _, seen := g.sent[pid]; seen && g.sent[pid] == g.sig {
			continue
		}
		g.fds.track(pid)
		unix.Kill(pid, g.sig)
		if g.sig == unix.SIGTERM {
			unix.Kill(pid, unix.SIGCONT)
		}
		g.sent[pid] = g.sig
	}
}

// groupAlive reports whether a process of the step is still there: in its
// cgroup, or of its group, or one that left the group with its token, or
// one a stop signalled that has not finished exiting. The group's zombies
// that runner inherited are reaped first. kill(2) also finds zombies,
// which linger for good where PID 1 does not reap (many containers), so
// without a cgroup a positive answer is checked in /proc where there is
// one. Processes found since the stop began get its signal.
func groupAlive(g *group) bool {
	pgid := g.cmd.Process.Pid
	reapGroup(pgid)
	if g.fds.pending() {
		return true
	}
	if g.cg != nil {
		if g.cg.populated() {
			if g.sig != 0 {
				for _, pid := range g.cg.procs() {
					if _, seen := g.sent[pid]; !seen {
						g.sent[pid] = g.sig
						g.fds.track(pid)
						unix.Kill(pid, g.sig)
					}
				}
			}
			return true
		}
		// Not kill(-pgid, 0): it finds zombies, which a parent other
		// than runner (PID 1 where runner is no subreaper) may leave for
		// long. Those signalled are held by their pidfds until gone.
		return false
	}
	err := unix.Kill(-pgid, 0)
	if errors.Is(err, unix.ESRCH) && !escapesPossible() {
		return false
	}
	running, escaped, ok := scan(pgid, g.token, g.since)
	if !ok {
		return !errors.Is(err, unix.ESRCH)
	}
	if g.sig != 0 {
		g.signalEscaped(escaped)
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

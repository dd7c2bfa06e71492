//go:build unix

package mcpserve

import (
	"os"
	"os/exec"
	"syscall"
)

// detach puts a run's process in a session of its own: a Ctrl-C or hang-up
// meant for the server (its process group, its terminal) does not reach
// the run.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }

// inode is the file's inode number: an atomic write (a rename over the
// file) changes it.
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// stopProcess asks a run's process to stop as Ctrl-C does: it cancels
// its steps and saves the run interrupted.
func stopProcess(pid int) error { return syscall.Kill(pid, syscall.SIGTERM) }

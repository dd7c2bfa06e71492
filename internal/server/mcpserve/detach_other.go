//go:build !unix

package mcpserve

import (
	"os"
	"os/exec"
)

// detach does nothing where there are no sessions: the run's process is
// still not tied to the server's streams.
func detach(cmd *exec.Cmd) {}

// inode is unknown here: size and time tell changes apart.
func inode(fi os.FileInfo) uint64 { return 0 }

// stopProcess ends a run's process; without signals it cannot save the
// run, which is then read as interrupted.
func stopProcess(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

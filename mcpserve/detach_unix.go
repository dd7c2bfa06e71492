//go:build unix

package mcpserve

import (
	"os/exec"
	"syscall"
)

// detach puts a run's process in a session of its own: a Ctrl-C or hang-up
// meant for the server (its process group, its terminal) does not reach
// the run.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }

//go:build !unix

package proc

import (
	"os"
	"os/exec"
)

// directCmd: without sh's rules at hand, scripts always run under a shell.
func directCmd(argv, env []string, dir string) *exec.Cmd { return nil }

func shSignaled(ps *os.ProcessState) (int, string, string) {
	c, sig := exitStatus(ps)
	return c, sig, ""
}

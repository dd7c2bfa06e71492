//go:build !unix

package proc

import (
	"os"
	"os/exec"
)

// Without process groups only the main process can be ended.
func setGroup(cmd *exec.Cmd) {}

func signalGroup(g *group, kill bool) { g.cmd.Process.Kill() }

func groupAlive(g *group) bool { return g.cmd.ProcessState == nil }

func exitStatus(ps *os.ProcessState) (int, string) {
	if ps == nil {
		return -1, ""
	}
	return ps.ExitCode(), ""
}

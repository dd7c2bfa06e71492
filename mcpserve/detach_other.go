//go:build !unix

package mcpserve

import "os/exec"

// detach does nothing where there are no sessions: the run's process is
// still not tied to the server's streams.
func detach(cmd *exec.Cmd) {}

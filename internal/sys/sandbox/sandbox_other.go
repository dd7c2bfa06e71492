//go:build !linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
)

// Sandbox is one sandboxed process (Linux only).
type Sandbox struct{ report Report }

// Wrap cannot confine anything here: it is an error, or with
// Policy.Optional an unconfined run that its Report says was unconfined.
func Wrap(cmd *exec.Cmd, p Policy) (*Sandbox, error) {
	missing := "a sandbox needs Linux (namespaces, Landlock)"
	if !p.Optional {
		return nil, fmt.Errorf("sandbox: %w: %s", ErrUnavailable, missing)
	}
	return &Sandbox{report: Report{Mode: "optional", Network: true, Missing: missing}}, nil
}

// Report says how the process ran.
func (s *Sandbox) Report() Report { return s.report }

// Started is called once the process started.
func (s *Sandbox) Started() {}

// Finish returns the process's own exit status.
func (s *Sandbox) Finish(ps *os.ProcessState) (code int, signal string, err error) {
	if ps == nil {
		return -1, "", nil
	}
	return ps.ExitCode(), "", nil
}

// Close removes what the sandbox made.
func (s *Sandbox) Close() {}

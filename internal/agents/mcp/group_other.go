//go:build !unix

package mcp

import (
	"os"
	"os/exec"
)

// ownGroup: no process groups here; the server is ended alone.
func ownGroup(cmd *exec.Cmd) {}

// killGroup kills the server itself: what it started is left to it.
func killGroup(p *os.Process) { _ = p.Kill() }

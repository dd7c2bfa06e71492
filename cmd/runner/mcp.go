package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// The MCP server is the runner-mcp binary (cmd/runner-mcp, package
// mcpserve), built apart so that runner itself stays free of the MCP SDK:
// it would add 3.3 MB and work to every start of runner, even `runner
// --version` (docs/architecture.md, "Dependencies"). `runner mcp` checks
// its flags and becomes runner-mcp, as `runner worker` becomes
// runner-temporal.

// mcpBinaryName is the server's binary, looked for beside runner, then on
// PATH; RUNNER_MCP overrides both.
const mcpBinaryName = "runner-mcp"

func cmdMCP(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// The flags runner-mcp takes, listed here for --help and completion,
	// and checked here so a mistake is said before anything starts.
	fs, g := newFlags("mcp", stderr)
	dir := fs.String("dir", ".", "the directory whose runs the server lists and starts (they are under DIR/.runner/runs)")
	addr := fs.String("http", "", "serve streamable HTTP on `ADDR` (127.0.0.1:PORT, or :PORT for 127.0.0.1) instead of stdin and stdout; the token to give is printed once")
	anyHost := fs.Bool("listen-any", false, "with --http: allow an address other than loopback (the token then crosses the network in clear)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 0 {
		return usageErr(stderr, fs, "mcp takes no arguments (got %q): use --dir for another directory", pos[0])
	}
	if *anyHost && *addr == "" {
		return usageErr(stderr, fs, "--listen-any goes with --http ADDR")
	}
	if fi, err := os.Stat(*dir); err != nil || !fi.IsDir() {
		return usageErr(stderr, fs, "--dir %s: not a directory", *dir)
	}
	bin, err := mcpBinary()
	if err != nil {
		fmt.Fprintf(stderr, "runner mcp: %v\n", err)
		return exitUsage
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "runner mcp: finding this runner, which starts the runs: %v\n", err)
		return exitFailed
	}
	// The runs it starts are runs of this runner.
	argv := []string{bin, "--runner", self, "--version", version, "--dir", *dir}
	if *addr != "" {
		argv = append(argv, "--http", *addr)
	}
	if *anyHost {
		argv = append(argv, "--listen-any")
	}
	argv = append(argv, globalArgs(g)...)
	if err := syscall.Exec(bin, argv, os.Environ()); err != nil {
		fmt.Fprintf(stderr, "runner mcp: starting %s: %v\n", bin, err)
		return exitUsage
	}
	return exitOK // not reached
}

// mcpBinary finds runner-mcp.
func mcpBinary() (string, error) {
	if p := os.Getenv("RUNNER_MCP"); p != "" {
		return p, nil
	}
	self, err := os.Executable()
	dir := "DIR"
	if err == nil {
		dir = filepath.Dir(self)
		p := filepath.Join(dir, mcpBinaryName)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(mcpBinaryName); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("serving MCP needs the %s binary, built apart so that runner stays free of the MCP SDK; "+
		"it is not next to this runner nor on PATH. Build it with\n"+
		"  go build -o %s/%s ./cmd/runner-mcp\n(or go install github.com/planrunner/runner/cmd/runner-mcp@latest), or set RUNNER_MCP to its path", mcpBinaryName, dir, mcpBinaryName)
}

package temporal

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/testutil/testtool"
)

// fsServerScript writes a program that starts the reference filesystem
// MCP server (from npm, in $RUNNER_TEST_NODE_MODULES) after appending its
// pid, which is its process group's id (runner starts each server in a
// group of its own), to pids, and a child that outlives the server
// unless its group is ended.
func fsServerScript(t *testing.T, dir, pids string) string {
	t.Helper()
	const how = "npm install --prefix DIR @modelcontextprotocol/server-filesystem@2026.8.31 and set RUNNER_TEST_NODE_MODULES=DIR/node_modules; .ci/install and .ci/run do"
	mods := testtool.FromEnv(t, "RUNNER_TEST_NODE_MODULES", "the MCP filesystem server", how)
	node := testtool.LookPath(t, "node", ".ci/install installs it with apt-get (nodejs)")
	entry := filepath.Join(mods, "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		testtool.Missing(t, "@modelcontextprotocol/server-filesystem", how)
	}
	p := filepath.Join(dir, "fs-server")
	// The sleep is what a server may start that would not end with its
	// stdin: only ending the group ends it.
	script := fmt.Sprintf("#!/bin/sh\necho $$ >> %q\nsleep 300 </dev/null >/dev/null 2>&1 &\nexec %q %q \"$@\"\n", pids, node, entry)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// liveInGroups lists the processes (not zombies) of the process groups
// whose ids pids holds, one a line, from /proc.
func liveInGroups(t *testing.T, pids string) []string {
	t.Helper()
	groups := map[string]bool{}
	data, _ := os.ReadFile(pids)
	for _, f := range strings.Fields(string(data)) {
		groups[f] = true
	}
	if len(groups) == 0 {
		t.Fatalf("%s names no server: none was started", pids)
	}
	var live []string
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		st, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces.
		s := string(st)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 2 && f[0] != "Z" && groups[f[2]] {
			live = append(live, strings.TrimSpace(s[:i+1])+" in group "+f[2])
		}
	}
	return live
}

// waitGone waits (up to limit, for a loaded machine) until no process of
// the groups pids names is left, and fails the test with those left.
func waitGone(t *testing.T, pids string, limit time.Duration, when string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		live := liveInGroups(t, pids)
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range live {
				syscall.Kill(-atoiGroup(p), syscall.SIGKILL) // not left to the next test
			}
			t.Fatalf("MCP server processes outlived %s: %s", when, strings.Join(live, "; "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func atoiGroup(live string) int {
	n, _ := strconv.Atoi(live[strings.LastIndexByte(live, ' ')+1:])
	return n
}

// toolsPlan is a plan whose script agent reads a file through the
// filesystem MCP server (started by server) and counts its lines through
// a tool the plan defines, in two steps; then waits, when wait is set,
// in a tool that sleeps, so that a test can stop the run or its worker
// while the server is up.
func toolsPlan(server, work string, wait bool) string {
	then := "- notes.txt read and counted."
	if wait {
		then = "- tool_calls: [{name: wait}]\n        - never said"
	}
	return `
version: 1
tools:
  count_lines:
    description: Counts the lines of a file of the workdir.
    parameters:
      type: object
      properties: {file: {type: string}}
      required: [file]
      additionalProperties: false
    run: wc -l < ${{ args.file }}
  wait:
    description: Waits a long time.
    run: touch waiting; sleep 120
    timeout: 10m
agents:
  clerk:
    provider: script
    mcp:
      - {name: fs, command: ["` + server + `", "` + work + `"]}
    tools: [fs.read_text_file, count_lines, wait]
    responses:
      read:
        - tool_calls: [{name: fs__read_text_file, args: {path: "` + filepath.Join(work, "notes.txt") + `"}}]
        - tool_calls: [{name: count_lines, args: {file: notes.txt}}]
        ` + then + `
      again:
        - tool_calls: [{name: fs__read_text_file, args: {path: "` + filepath.Join(work, "notes.txt") + `"}}]
        - read again.
steps:
  - {label: notes, type: command, run: "printf 'first line\nsecond line\n' > notes.txt"}
  - {label: read, type: llm, agent: clerk, prompt: Read notes.txt and count its lines.}
  - {label: again, type: llm, agent: clerk, prompt: Read it again.}
  - {label: show, type: command, run: "echo ${{ steps.read.output }}"}
`
}

// recordingsView is a board's recordings as a replay compares them: the
// model requests by their hash, the MCP exchanges and the calls of the
// plan's tools whole.
func recordingsView(b *board.Board) []string {
	var out []string
	for _, r := range b.Recordings() {
		v := fmt.Sprintf("%s %s#%d call %d agent %s request %s", r.Kind, r.Label, r.Visit, r.Call, r.Agent, r.RequestSHA256)
		if r.Kind == "mcp" || r.Kind == "tool" {
			v += " response " + string(r.Response)
		}
		out = append(out, v)
	}
	return out
}

// TestDevServerMCPAndPlanTools: on Temporal, an agent uses an MCP
// server's tools (the reference filesystem server, a real process) and
// a command-template tool the plan defines. The run records them as a
// run in runner's process does (same steps, entries and recordings), the
// servers end with each step (none is left when the run is over), and
// the run replays offline with the server's program gone. A run
// interrupted while a server is up, and a worker told to stop while a
// step has one up, leave no server process either.
func TestDevServerMCPAndPlanTools(t *testing.T) {
	c := newCluster(t)
	w := c.worker(t)
	bin := t.TempDir()
	pids := filepath.Join(bin, "pids")
	server := fsServerScript(t, bin, pids)

	plan := writePlan(t, c.work, toolsPlan(server, c.work, false))
	out := filepath.Join(c.work, "temporal.json")
	// The worker shares c.work: the plan names the file by its path.
	run := c.run(t, plan, out, "--shared-workspace")
	if code := run.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("run exited %d:\n%s\nworker:\n%s", code, run.out, w.out)
	}
	// Ended with each step's activity: by the time the run is over.
	if live := liveInGroups(t, pids); len(live) > 0 {
		t.Errorf("MCP server processes outlived the run: %s", strings.Join(live, "; "))
	}
	if n := len(strings.Fields(string(must(os.ReadFile(pids))))); n != 2 {
		t.Errorf("the server was started %d times; want 2, once for each step that used it", n)
	}
	got := loadBoard(t, out)
	if got.Run().Status != "succeeded" {
		t.Fatalf("run = %+v", got.Run())
	}
	var sawFile, sawCount bool
	for _, r := range got.Recordings() {
		sawFile = sawFile || r.Kind == "mcp" && strings.Contains(string(r.Response), "first line\\nsecond line")
		sawCount = sawCount || r.Kind == "tool" && strings.Contains(string(r.Response), `"text":"2\n"`)
	}
	if !sawFile || !sawCount {
		t.Errorf("the board lacks the file read through the server (%v) or the tool's count (%v):\n%s", sawFile, sawCount, strings.Join(recordingsView(got), "\n"))
	}

	// The same plan in runner's own process, in the same directory (the
	// plan names the file by its path).
	inproc := filepath.Join(c.work, "inproc.json")
	ip := startProc(t, c.work, c.runner, "run", plan, "--out", inproc, "-q")
	if code := ip.wait(t, time.Minute); code != 0 {
		t.Fatalf("in-process run exited %d:\n%s", code, ip.out)
	}
	want := loadBoard(t, inproc)
	if d := sameSteps(want.Steps(), got.Steps()); d != "" {
		t.Errorf("steps differ: %s", d)
	}
	if d := firstDiff(entriesView(want), entriesView(got)); d != "" {
		t.Errorf("entries differ: %s", d)
	}
	if d := firstDiff(recordingsView(want), recordingsView(got)); d != "" {
		t.Errorf("recordings differ: %s", d)
	}

	// Offline, with no server to start.
	if err := os.Rename(server, server+".gone"); err != nil {
		t.Fatal(err)
	}
	rep := startProc(t, c.work, c.runner, "replay", out, "--offline")
	if code := rep.wait(t, time.Minute); code != 0 || !strings.Contains(rep.out.String(), "matched") {
		t.Fatalf("replay --offline exited %d:\n%s", code, rep.out)
	}
	if err := os.Rename(server+".gone", server); err != nil {
		t.Fatal(err)
	}

	// Stopped while a server is up: the run interrupted, then the worker
	// told to stop (SIGTERM), each with a step waiting in a tool after
	// reading through the server.
	for _, stop := range []string{"the run interrupted", "its worker stopped"} {
		os.Remove(pids)
		os.Remove(filepath.Join(c.work, "waiting"))
		plan := writePlan(t, c.work, toolsPlan(server, c.work, true))
		run := c.run(t, plan, filepath.Join(c.work, "stopped.json"), "--shared-workspace")
		waitFile(t, pids, 2*time.Minute)
		deadline := time.Now().Add(2 * time.Minute)
		for _, err := os.Stat(filepath.Join(c.work, "waiting")); err != nil; _, err = os.Stat(filepath.Join(c.work, "waiting")) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the step never reached its wait tool:\n%s\nworker:\n%s", stop, run.out, w.out)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if len(liveInGroups(t, pids)) == 0 {
			t.Fatalf("%s: the server is not up while its step runs", stop)
		}
		if stop == "the run interrupted" {
			run.cmd.Process.Signal(os.Interrupt)
			run.wait(t, 2*time.Minute)
		} else {
			w.cmd.Process.Signal(syscall.SIGTERM)
			w.wait(t, 2*time.Minute)
		}
		waitGone(t, pids, time.Minute, stop)
	}
}

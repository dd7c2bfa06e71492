// Command runner runs declarative workflow plans. See README.md.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/sys/boot"
)

// Exit codes (docs/spec.md §5).
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitDiverged    = 3
	exitWaiting     = 4 // an input step awaits `runner answer` (docs/spec.md §7)
	exitInterrupted = 130
)

type command struct {
	name, usage, summary string
	run                  func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

var commands []command

func init() {
	commands = []command{
		{"run", "run PLAN [--var k=v]... [--agent NAME.FIELD=V]... [--report] [--workdir DIR] [--out FILE] [--dry-run] [--sync] [--engine temporal --temporal HOST:PORT]", "run a plan", cmdRun},
		{"validate", "validate PLAN...", "check plans; print every problem as file:line:col: message", cmdValidate},
		{"replay", "replay BLACKBOARD [--plan PLAN] [--workdir DIR | --offline] [--from LABEL[#VISIT]] [--agent NAME.model=M]", "re-run a saved run with model answers from its recording", cmdReplay},
		{"resume", "resume BLACKBOARD [--force] [--report]", "continue an interrupted or failed run from where it stopped", cmdResume},
		{"runs", "runs [--dir DIR] [--json] [--status S] [--plan P] [--limit N] | runs prune [--dir DIR] [--keep N] [--older-than AGE] [--status S] [--dry-run]", "list the runs saved under a directory, or remove old ones", cmdRuns},
		{"cost", "cost [--dir DIR] [--since DAY|AGE] [--json]", "what model calls cost, by day, plan, agent and model", cmdCost},
		{"answer", answerUsage, "answer an input step a run waits at (then resume)", cmdAnswer},
		{"apply", "apply [--dir DIR] [-p N] [--check] [--reverse] PATCH|-", "apply a unified diff, all or nothing", cmdApply},
		{"board", boardUsage, "read or change the blackboard of a saved run", cmdBoard},
		{"memory", memoryUsage, "list, show or remove what agents remember across runs", cmdMemory},
		{"serve", serveUsage, "a live web UI of the runs: steps, board, answering inputs", cmdServe},
		{"mcp", "mcp [--dir DIR] [--http 127.0.0.1:PORT [--listen-any]]", "serve runner to agents over MCP (stdio, or HTTP with a token)", cmdMCP},
		{"a2a", a2aUsage, "serve plans as A2A agents: each message starts a run", cmdA2A},
		{"report", "report BLACKBOARD [--format html|junit] [-o FILE]", "write the run as one HTML page, or its tests as JUnit XML", cmdReport},
		{"eval", evalUsage, "compare a run with a golden one, or runs per agent and model", cmdEval},
		{"trace", "trace BLACKBOARD [--otlp-endpoint URL | -o FILE]", "export a saved run's trace (OpenTelemetry) with its recorded times", cmdTrace},
		{"graph", "graph PLAN [--format mermaid|dot]", "draw the plan", cmdGraph},
		{"schema", "schema", "print the JSON Schema of plan files", cmdSchema},
		{"worker", "worker --temporal HOST:PORT [--namespace N] [--task-queue Q] [--blobs DIR] [--workdir DIR]", "run plans' steps for Temporal (needs runner-temporal; see README)", cmdWorker},
		{"completion", "completion bash|zsh|fish", "print a shell completion script", cmdCompletion},
		{"version", "version", "print the version", cmdVersion},
	}
}

func main() {
	// Before anything reads the environment: runner runs steps, which must
	// reach neither its API keys nor the processes they leave behind.
	boot.Start("runner", boot.Options{RunsSteps: true})
	if err := agents.UseUserPrices(os.Getenv); err != nil {
		fmt.Fprintf(os.Stderr, "runner: %v\n", err)
		os.Exit(exitUsage)
	}
	boot.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	args, err := hoistGlobals(args)
	if err != nil {
		fmt.Fprintf(stderr, "runner: %v\n", err)
		return exitUsage
	}
	if len(args) == 0 {
		usage(stderr) // a command was wanted: the list is the error
		return exitUsage
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" && len(args) == 1 {
		usage(stdout)
		return exitOK
	}
	if args[0] == "help" { // runner help COMMAND [SUBCOMMAND]: its --help
		if !isCommand(args[1]) {
			return unknownCommand(stderr, args[1])
		}
		args = append(args[1:], "--help")
	}
	if args[0] == "--version" {
		return cmdVersion(nil, stdin, stdout, stderr)
	}
	if args[0] == "__complete" { // the completion scripts' helper, not in the help
		return completeCommand(args[1:], stdin, stdout, stderr)
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdin, stdout, stderr)
		}
	}
	return unknownCommand(stderr, args[0])
}

func isCommand(name string) bool {
	for _, c := range commands {
		if c.name == name {
			return true
		}
	}
	return false
}

func unknownCommand(stderr io.Writer, name string) int {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	fmt.Fprintf(stderr, "runner: unknown command %q%s\n", name, plans.Suggest(name, names))
	fmt.Fprintln(stderr, "Usage: runner COMMAND [ARGS] [flags]; `runner --help` lists the commands")
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, "runner: run declarative workflow plans\n\nUsage: runner COMMAND [ARGS] [flags]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `runner help COMMAND` for a command's arguments and flags.")
	fmt.Fprintln(w, "\nGlobal flags: --log-format console|json, --log-level debug|info|warn|error, -q")
	fmt.Fprintln(w, "Exit codes: 0 succeeded, 1 plan failed, 2 bad usage or invalid plan,\n  3 replay diverged, 4 waiting for an answer, 130 interrupted")
}

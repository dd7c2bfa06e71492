// Command mcpclient is the client the official MCP conformance suite
// runs (conformance client --command "mcpclient" --scenario NAME): it
// drives runner's MCP client exactly as a user's plan does, through the
// runner binary. For the scenario server's URL (its last argument) it
// writes a plan whose llm step's agent (a script agent, so no model is
// needed) has the server as its MCP server and calls the scenario's tool;
// it runs the plan, and while the run waits for a person (the server
// asked one something: an elicitation), it answers as a person would,
// with runner answer (accept, every field at its default), and resumes.
//
// Environment: MCP_CONFORMANCE_SCENARIO (set by the suite) and
// RUNNER_BIN, the runner binary to drive. It is a test program: it
// imports nothing of runner's.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// calls is the tool call (name, arguments) the step makes in each
// scenario; a scenario not named makes none (it only starts the server
// and lists its tools, as every step does).
var calls = map[string][2]string{
	"tools_call":                          {"add_numbers", `{"a": 2, "b": 3}`},
	"elicitation-sep1034-client-defaults": {"test_client_elicitation_defaults", `{}`},
	"sse-retry":                           {"test_reconnection", `{}`},
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mcpclient:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) < 2 {
		return errors.New("usage: mcpclient URL (MCP_CONFORMANCE_SCENARIO and RUNNER_BIN set)")
	}
	url := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	bin := os.Getenv("RUNNER_BIN")
	if bin == "" {
		return errors.New("RUNNER_BIN is not set")
	}
	dir, err := os.MkdirTemp("", "mcpclient-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(planText(url, scenario)), 0o600); err != nil {
		return err
	}
	bb := filepath.Join(dir, "blackboard.json")
	// While the run holds the tool call open for a person, answer the
	// server's question as one would from another terminal (runner
	// answer reaches the running run); a run that stopped to wait (exit
	// 4) is answered on its file and resumed.
	cmd := command(bin, dir, "run", plan, "--out", bb, "--workdir", dir)
	if err := cmd.Start(); err != nil {
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	var waitErr error
	answered := false
	for end := time.Now().Add(time.Minute); ; {
		select {
		case waitErr = <-ended:
			goto done
		case <-time.After(200 * time.Millisecond):
		}
		if !answered && time.Now().Before(end) {
			a := command(bin, dir, "answer", bb, "--step", "call/elicit-1", "--json", `{"action":"accept"}`, "--by", "conformance")
			a.Stderr = nil // not waiting yet: tried again
			answered = a.Run() == nil
		}
	}
done:
	code, err := exitCode(waitErr)
	for n := 1; code == 4 && n <= 5; n++ {
		label := "call/elicit-" + strconv.Itoa(n)
		if code, err = exitCode(command(bin, dir, "answer", bb, "--step", label, "--json", `{"action":"accept"}`, "--by", "conformance").Run()); err != nil || code != 0 {
			return fmt.Errorf("runner answer %s: exit %d %v", label, code, err)
		}
		code, err = exitCode(command(bin, dir, "resume", bb).Run())
	}
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("the run ended with exit %d", code)
	}
	return nil
}

// command runs the runner binary in dir, its output on our stderr (the
// suite keeps it).
func command(bin, dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd
}

// exitCode is the exit code of a command that ran, or its error.
func exitCode(err error) (int, error) {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

// planText is the plan of a scenario: one llm step whose script agent
// calls the scenario's tool, then says done.
func planText(url, scenario string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	answers := `["done"]`
	if c, ok := calls[scenario]; ok {
		answers = `[{"tool_calls": [{"name": ` + q("conf__"+c[0]) + `, "args": ` + c[1] + `}]}, "done"]`
	}
	return `version: 1
agents:
  client:
    provider: script
    responses: {call: ` + answers + `}
    mcp:
      - {name: conf, url: ` + q(url) + `, start_timeout: 20s, call_timeout: 20s}
    tools: ["conf.*"]
steps:
  - {label: call, type: llm, agent: client, prompt: "Call the tool."}
`
}

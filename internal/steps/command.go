package steps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/sys/proc"
	"github.com/planrunner/runner/internal/sys/sandbox"
)

func init() { add(commandType{}) }

// commandType runs a shell script with `sh -c` in its own process group.
type commandType struct{}

// CommandResult is what a command step reports.
type CommandResult struct {
	ExitCode      int    `json:"exit_code"`
	Stdout        string `json:"stdout"`
	Stderr        string `json:"stderr"`
	StdoutDropped int64  `json:"stdout_dropped,omitempty"` // bytes cut from the middle by the cap
	StderrDropped int64  `json:"stderr_dropped,omitempty"`
	Signal        string `json:"signal,omitempty"`
	TimedOut      bool   `json:"timed_out,omitempty"`
	// Sandbox says how the script was confined (a step with sandbox:).
	Sandbox *sandbox.Report `json:"sandbox,omitempty"`
}

type commandStep struct {
	run            *engine.Template
	dir            *engine.Template
	env            []engine.EnvTemplate
	maxOutput      int
	keepBackground bool
	sandbox        *sandboxSpec
	// argv: run is one simple command with nothing for sh to expand,
	// started without a shell (proc.Argv).
	argv []string
	lit  string // the script argv was read from
}

func (commandType) Name() string { return "command" }

// OutputType: the output is text (its standard output, trimmed).
func (commandType) OutputType() any        { return "" }
func (commandType) Result() any            { return CommandResult{} }
func (commandType) Spec() *engine.TypeSpec { return &commandSpec }

// Caps: the step runs a process (ReplayWorld, the default), which it
// stops at its timeout.
func (commandType) Caps() engine.Caps {
	return engine.Caps{Bounded: true, Shows: engine.ShowsProcess}
}

var commandSpec = engine.TypeSpec{
	Doc: "Runs a shell script with `sh -c` in its own process group. A non-zero exit fails the step; " +
		"its output is the script's standard output, trimmed. Processes the script leaves running are ended with it.",
	Fields: []engine.Field{
		{Name: "run", Kind: engine.KindShell, Required: true,
			Doc:      "A shell script (sh -c); ${{ }} values reach it as data, never as shell syntax.",
			Examples: []any{"go vet ./..."}},
		{Name: "dir", Kind: engine.KindTemplate,
			Doc:      "Where it runs, relative to the workdir.",
			Examples: []any{"backend"}},
		{Name: "env", Kind: engine.KindEnv,
			Doc:      "Extra environment for this step; ${{ secrets.NAME }} gives it a secret.",
			Examples: []any{map[string]any{"GH_TOKEN": "${{ secrets.GH_TOKEN }}"}}},
		{Name: "max_output", Kind: engine.KindInt, Schema: `{"minimum": 1}`,
			Doc:      "Bytes kept of each stream, head and tail (default 1 MiB).",
			Examples: []any{65536}},
		{Name: "keep_background", Kind: engine.KindBool, Default: false,
			Doc:      "true: processes the script leaves running are not ended with the step.",
			Examples: []any{true}},
		sandboxField,
	},
	Example: `- label: vet
  type: command
  run: go vet ./...
  dir: .
  env: {GOFLAGS: -mod=mod}`,
	Results: []engine.ResultField{
		{Name: "exit_code", Doc: "The script's exit status."},
		{Name: "stdout", Doc: "Its standard output (head and tail when over max_output)."},
		{Name: "stderr", Doc: "Its standard error (head and tail when over max_output)."},
		{Name: "stdout_dropped", Doc: "Bytes cut from the middle of stdout by max_output."},
		{Name: "stderr_dropped", Doc: "Bytes cut from the middle of stderr by max_output."},
		{Name: "signal", Doc: "The signal that ended the script, if one did."},
		{Name: "timed_out", Doc: "The step's timeout ended the script."},
		{Name: "sandbox", Doc: "How the script was confined: mode, active, landlock (ABI), network, write, read, missing."},
	},
}

func (commandType) Decode(d *engine.Decoder) engine.Step {
	s := &commandStep{}
	if d.Required("run") {
		s.run = d.ShellTemplate("run")
	}
	if s.run != nil {
		if lit, ok := s.run.Literal(); ok {
			s.lit = lit
			s.argv, _ = proc.Argv(lit)
		}
	}
	s.dir = d.Template("dir")
	s.env = d.Env("env")
	s.keepBackground = d.Bool("keep_background", false)
	s.maxOutput = d.Int("max_output", 0)
	s.sandbox = decodeSandbox(d)
	if s.sandbox != nil && s.keepBackground {
		d.Errorf(d.Node("keep_background"), "keep_background cannot be used with sandbox: a sandboxed step's processes end with it (its own PID namespace)")
	}
	if s.maxOutput < 0 {
		d.Errorf(d.Node("max_output"), "max_output must be a positive number of bytes")
	}
	return s
}

func (s *commandStep) Run(ctx context.Context, sc *engine.StepContext) (engine.Result, error) {
	script, err := sc.EvalShell(s.run)
	if err != nil {
		return engine.Result{}, fmt.Errorf("run: %w", err)
	}
	defer script.Close()
	dir, env, err := stepDirEnv(sc, s.dir, s.env)
	if err != nil {
		return engine.Result{}, err
	}
	env = append(env, script.Env...)
	policy, err := s.sandbox.policy(sc, dir, env)
	if err != nil {
		return engine.Result{}, err
	}
	// Processes the script leaves behind are ended with it, unless
	// keep_background says they are services for later steps.
	var argv []string
	if len(script.Env) == 0 && script.Script == s.lit {
		argv = s.argv
	}
	pr, err := proc.Run(ctx, proc.Spec{Script: script.Script, Direct: argv, Dir: dir, Env: env, MaxOutput: s.maxOutput, KeepBackground: s.keepBackground,
		Stdout: sc.Output("stdout"), Stderr: sc.Output("stderr"), Sandbox: policy, Log: &sc.Log})
	if err != nil {
		return engine.Result{}, err
	}
	warnUnconfined(sc, pr.Sandbox)
	res := CommandResult{ExitCode: pr.ExitCode, Stdout: pr.Stdout.Text, Stderr: pr.Stderr.Text,
		StdoutDropped: pr.Stdout.Dropped, StderrDropped: pr.Stderr.Dropped, Signal: pr.Signal,
		// Its own timeout, or the step's (the engine's deadline on ctx).
		TimedOut: pr.TimedOut || (pr.Canceled && errors.Is(ctx.Err(), context.DeadlineExceeded)),
		Sandbox:  s.sandbox.recorded(pr.Sandbox)}
	out := engine.Result{Output: strings.TrimSpace(pr.Stdout.Text), Fields: res}
	switch {
	case ctx.Err() != nil:
		return out, context.Cause(ctx)
	case pr.ExitCode != 0:
		return out, fmt.Errorf("exit status %d%s", pr.ExitCode, tail("stderr", pr.Stderr.Text))
	}
	return out, nil
}

// Describe is what a dry run shows.
func (s *commandStep) Describe() string {
	if s.run == nil {
		return ""
	}
	return "run: " + strings.TrimSpace(s.run.Src) + s.sandbox.describe()
}

// stepDirEnv resolves a step's dir (relative to the workdir) and builds its
// environment: the process's, the plan's env, then the step's own.
func stepDirEnv(sc *engine.StepContext, dirT *engine.Template, envT []engine.EnvTemplate) (string, []string, error) {
	dir := sc.Workdir
	if dirT != nil {
		d, err := sc.Eval(dirT)
		if err != nil {
			return "", nil, fmt.Errorf("dir: %w", err)
		}
		given := d
		if !filepath.IsAbs(d) {
			d = filepath.Join(sc.Workdir, d)
		}
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			if given != d {
				return "", nil, fmt.Errorf("dir %s: %s is not a directory (a step's dir is relative to the workdir, %s)", given, d, sc.Workdir)
			}
			return "", nil, fmt.Errorf("dir %s: not a directory", d)
		}
		dir = d
	}
	env := append([]string(nil), sc.Env...)
	for _, e := range envT {
		v, err := sc.Eval(e.Value)
		if err != nil {
			return "", nil, fmt.Errorf("env.%s: %w", e.Name, err)
		}
		env = append(env, e.Name+"="+v)
	}
	return dir, env, nil
}

// tail quotes the end of a stream for an error message: its last line on
// the first line of the message (what a progress line shows), then up to
// ten last lines below.
func tail(name, text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return ""
	}
	lines := strings.Split(text, "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(lines) == 1 {
		return ": " + last
	}
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return fmt.Sprintf(": %s\n%s, last %d lines:\n%s", last, name, len(lines), strings.Join(lines, "\n"))
}

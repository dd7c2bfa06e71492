package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/testrun"
)

func init() { add(testType{}) }

// testType runs a project's test suite and reports it as facts a model can
// fix: outcome, counts, failures with file and line, and a short summary.
// The step-level `timeout` is the engine's: it arrives as the context's
// deadline, which ends the suite's whole process group.
type testType struct{}

// TestResult is what a test step reports (see testrun.Result). Its
// duration_ms, the suite's own run time, is shadowed in expressions by the
// step's common duration_ms; the saved result keeps it.
type TestResult = testrun.Result

type testStep struct {
	command   *engine.Template
	framework string
	dir       *engine.Template
	env       []engine.EnvTemplate
	sandbox   *sandboxSpec
}

func (testType) Name() string { return "test" }

// OutputType: the output is text (the summary).
func (testType) OutputType() any        { return "" }
func (testType) Result() any            { return TestResult{} }
func (testType) Spec() *engine.TypeSpec { return &testSpec }

// Caps: the step runs the tests (ReplayWorld, the default); its result is
// their outcome.
func (testType) Caps() engine.Caps { return engine.Caps{Shows: engine.ShowsTests} }

var testSpec = engine.TypeSpec{
	Doc: "Runs a project's test suite and reports it as facts a model can fix: outcome, counts, " +
		"failures with file and line, and a short summary, which is the step's output. " +
		"A failing suite fails the step; with continue_on_error a plan can branch on steps.<label>.passed.",
	Fields: []engine.Field{
		{Name: "command", Kind: engine.KindShell,
			Doc: "The test command (default per framework, e.g. go test ./...).", Examples: []any{"go test ./..."}},
		{Name: "framework", Kind: engine.KindEnum, Enum: append([]string{"auto"}, testrun.Frameworks...), Default: "auto",
			Doc: "How to read the results: auto picks from the project's files.", Examples: []any{"go"}},
		{Name: "dir", Kind: engine.KindTemplate,
			Doc: "Where the tests run, relative to the workdir.", Examples: []any{"backend"}},
		{Name: "env", Kind: engine.KindEnv,
			Doc: "Extra environment for the test run.", Examples: []any{map[string]any{"GOFLAGS": "-count=1"}}},
		sandboxField,
	},
	Example: `- label: test
  type: test
  framework: go
  command: go test ./...
  continue_on_error: true`,
	Results: []engine.ResultField{
		{Name: "passed", Doc: "The suite passed."},
		{Name: "outcome", Doc: "passed, failed, build_failed, collection_error, timeout, no_tests or error."},
		{Name: "exit_code", Doc: "The test command's exit status."},
		{Name: "timed_out", Doc: "The step's timeout ended the suite."},
		{Name: "counts", Doc: "Tests that ran to a verdict: total, passed, failed, skipped, errors."},
		{Name: "failures", Doc: "Each failed test: id, file, line, message, excerpt and kind (fail, panic, timeout, error)."},
		{Name: "build_errors", Doc: "Errors that kept the tests from building: file, line, col, message."},
		{Name: "summary", Doc: "A few lines a model can act on (also the step's output)."},
		{Name: "framework", Doc: "The framework the results were read as."},
		{Name: "command", Doc: "The command that ran."},
		{Name: "duration_ms", Doc: "The suite's own run time (expressions see the step's duration_ms)."},
		{Name: "sandbox", Doc: "How the suite was confined: mode, active, landlock (ABI), network, write, read, missing."},
	},
}

func (testType) Decode(d *engine.Decoder) engine.Step {
	s := &testStep{}
	s.command = d.ShellTemplate("command")
	s.framework = d.Enum("framework", "auto")
	if s.framework == "generic" && !d.Has("command") {
		d.Errorf(d.Node("framework"), "framework generic needs a command")
	}
	s.dir = d.Template("dir")
	s.env = d.Env("env")
	s.sandbox = decodeSandbox(d)
	return s
}

func (s *testStep) Run(ctx context.Context, sc *engine.StepContext) (engine.Result, error) {
	// ${{ }} values reach the command through its environment: model
	// output can pick a test name, never add shell syntax.
	command, err := sc.EvalShell(s.command)
	if err != nil {
		return engine.Result{}, fmt.Errorf("command: %w", err)
	}
	defer command.Close()
	dir, env, err := stepDirEnv(sc, s.dir, s.env)
	if err != nil {
		return engine.Result{}, err
	}
	env = append(env, command.Env...)
	policy, err := s.sandbox.policy(sc, dir, env)
	if err != nil {
		return engine.Result{}, err
	}
	res, err := testrun.Run(ctx, testrun.Options{Command: command.Script, Framework: s.framework, Dir: dir, Env: env,
		Echo: echoTo(sc.Output("stdout"), sc.Output("stderr")), Sandbox: policy})
	if err != nil {
		return engine.Result{}, err
	}
	warnUnconfined(sc, res.Sandbox)
	res.Sandbox = s.sandbox.recorded(res.Sandbox)
	if res.Output != "" {
		sc.Log.Debug().Str("outcome", res.Outcome).Msg(res.Output)
	}
	// The summary is the output a plan pastes into the next prompt; the
	// result keeps its fields even when the step fails, so a plan with
	// continue_on_error can branch on steps.<label>.passed.
	out := engine.Result{Output: res.Summary, Fields: res}
	switch {
	case ctx.Err() != nil && !res.TimedOut:
		return out, context.Cause(ctx) // interrupted: not the suite's fault
	case res.TimedOut && ctx.Err() != nil:
		// The summary says it timed out and after how long; it stands for
		// the step's timeout, which the engine then does not repeat.
		return out, &causeError{msg: res.Summary, cause: context.Cause(ctx)}
	case !res.Passed:
		return out, errors.New(res.Summary)
	}
	return out, nil
}

// causeError is an error with its own text that still is its cause for
// errors.Is.
type causeError struct {
	msg   string
	cause error
}

func (e *causeError) Error() string { return e.msg }
func (e *causeError) Unwrap() error { return e.cause }

// echoTo writes a suite's lines to the step's output writers (nil: none).
// go test runs with -json: its events are shown as the text they carry.
func echoTo(stdout, stderr io.Writer) func(stream, line string) {
	if stdout == nil && stderr == nil {
		return nil
	}
	return func(stream, line string) {
		w := stdout
		if stream == "stderr" {
			w = stderr
		}
		if w == nil {
			return
		}
		if strings.HasPrefix(line, "{") {
			var ev struct {
				Action string
				Output *string
			}
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Action != "" {
				if ev.Output == nil {
					return
				}
				io.WriteString(w, *ev.Output)
				return
			}
		}
		io.WriteString(w, line+"\n")
	}
}

// Describe is what a dry run shows.
func (s *testStep) Describe() string {
	d := "test (" + s.framework + ")"
	if s.command != nil {
		d += ": " + headLine(s.command.Src)
	}
	return d + s.sandbox.describe()
}

package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/planrunner/runner/engine"
	"github.com/planrunner/runner/steps/testrun"
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
}

func (testType) Name() string { return "test" }
func (testType) Result() any  { return TestResult{} }

func (testType) Decode(d *engine.Decoder) engine.Step {
	s := &testStep{}
	s.command = d.ShellTemplate("command")
	s.framework = d.Enum("framework", "auto", append([]string{"auto"}, testrun.Frameworks...)...)
	if s.framework == "generic" && !d.Has("command") {
		d.Errorf(d.Node("framework"), "framework generic needs a command")
	}
	s.dir = d.Template("dir")
	s.env = d.Env("env")
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
	res, err := testrun.Run(ctx, testrun.Options{Command: command.Script, Framework: s.framework, Dir: dir, Env: env,
		Echo: echoTo(sc.Output("stdout"), sc.Output("stderr"))})
	if err != nil {
		return engine.Result{}, err
	}
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

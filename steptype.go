package runner

import (
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/steps"
)

// The names a program needs to write a step type of its own, the engine's
// own types under other names: a type written against them is the same
// to the engine as a built-in one. `go doc` on
// github.com/planrunner/runner/internal/engine shows their methods.
type (
	// Type is a kind of step, named by `type:` in a plan: Name returns
	// that name, Result a zero value of the type's result struct (its
	// json-tagged fields are what steps.<label>.<field> may name, checked
	// at load), and Decode reads the step's own fields through a Decoder
	// and returns the Step to run.
	Type = engine.Type

	// Step is one decoded step, run any number of times: Run performs it
	// and returns its Result; an error fails the step.
	Step = engine.Step

	// Result is what a step returns: Output (steps.<label>.output) and
	// Fields (a value of its type's Result struct), and optionally a key
	// to write on the board (Write), committed with the step's record.
	Result = engine.Result

	// StepContext is what a running step may use: its label and visit,
	// the run's id, workdir, environment, board and logger, and Eval to
	// render the step's templates against the run so far.
	StepContext = engine.StepContext

	// Decoder gives a type's Decode the step's own fields (String, Bool,
	// Int, Duration, Template, Required...) and takes its problems, each
	// reported at its line and column (Errorf).
	Decoder = engine.Decoder

	// Template is a field that may hold ${{ }} expressions, read with
	// Decoder.Template and rendered with StepContext.Eval.
	Template = engine.Template

	// Registry holds the step types a plan may use, by name; Register
	// adds one (a name registered twice panics).
	Registry = engine.Registry

	// Caps is what a step type says of itself, by a method
	// `Caps() runner.Caps` on its Type: where it runs (Sched), how a
	// replay treats it (Replay, a ReplayMode), whether its own timeout bounds it, and
	// the kinds of result the views show (Shows). A type without the
	// method touches the world: a replay in a workdir runs it, an offline
	// one serves its recorded result.
	Caps = engine.Caps

	// Sched is where a step type runs when steps are not all run alike
	// (on Temporal): SchedWorld, SchedPure or SchedWaits.
	Sched = engine.Sched

	// ReplayMode is how a replay treats a step type's visits:
	// ReplayWorld, ReplayRerun or ReplayRecorded.
	ReplayMode = engine.Replay

	// Shows is a set of kinds of result (ShowsModel, ShowsEdit,
	// ShowsTests...) the report, traces, JUnit, eval and GitHub Actions
	// output show whatever the type's name.
	Shows = engine.Shows
)

// What a step type may declare in its Caps; each is described in `go doc`
// of github.com/planrunner/runner/internal/engine.
const (
	SchedWorld = engine.SchedWorld // touches processes, files or models (the default)
	SchedPure  = engine.SchedPure  // reads and writes only the board
	SchedWaits = engine.SchedWaits // waits for a person's answer

	ReplayWorld    = engine.ReplayWorld    // run in a workdir, served from the recording offline (the default)
	ReplayRerun    = engine.ReplayRerun    // a function of the board, clock and model answers: run again
	ReplayRecorded = engine.ReplayRecorded // a person's answer: always from the recording

	ShowsModel   = engine.ShowsModel   // one agent's answer
	ShowsAgents  = engine.ShowsAgents  // several agents' turns
	ShowsEdit    = engine.ShowsEdit    // applied a diff; `files` are what it changed
	ShowsTests   = engine.ShowsTests   // a test run's result
	ShowsProcess = engine.ShowsProcess // one process: exit_code, stdout, stderr
	ShowsAsk     = engine.ShowsAsk     // asked a person; `answer` is what they said
	ShowsRoute   = engine.ShowsRoute   // says where the run went next
)

// NewRegistry returns a registry of the built-in step types (command,
// llm, board, branch, ...), to which a program adds its own with
// Register before passing it to [Load], [Run] or [Replay].
func NewRegistry() *Registry { return steps.Registry() }

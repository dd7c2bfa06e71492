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
)

// NewRegistry returns a registry of the built-in step types (command,
// llm, board, branch, ...), to which a program adds its own with
// Register before passing it to [Load], [Run] or [Replay].
func NewRegistry() *Registry { return steps.Registry() }

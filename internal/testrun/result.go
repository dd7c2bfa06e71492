package testrun

import "github.com/planrunner/runner/internal/sys/sandbox"

// Outcomes, one word each, as a plan branches on them.
const (
	Passed          = "passed"
	Failed          = "failed"
	BuildFailed     = "build_failed"
	CollectionError = "collection_error"
	Timeout         = "timeout"
	NoTests         = "no_tests"
	Error           = "error" // the runner could not run: binary missing, bad usage
)

// Failure kinds.
const (
	KindFail    = "fail"    // an assertion or an explicit test failure
	KindPanic   = "panic"   // a panic or an uncaught exception ended the test
	KindTimeout = "timeout" // still running when a timeout ended the run
	KindError   = "error"   // an error outside the test body: setup, fixture, loading the file
)

// Result is what a test run reports; field names follow the plan's
// `steps.<label>.*` names.
type Result struct {
	Passed      bool         `json:"passed"`
	Outcome     string       `json:"outcome"`
	ExitCode    int          `json:"exit_code"`
	TimedOut    bool         `json:"timed_out"`
	Counts      Counts       `json:"counts"`
	Failures    []Failure    `json:"failures"`
	BuildErrors []BuildError `json:"build_errors"`
	Summary     string       `json:"summary"`
	Framework   string       `json:"framework"`
	Command     string       `json:"command"`
	DurationMS  int64        `json:"duration_ms"`
	// Sandbox says how the suite was confined (a step with sandbox:).
	Sandbox *sandbox.Report `json:"sandbox,omitempty"`

	// Output is the end of what the runner printed (stdout then stderr),
	// for a log; it is not part of the plan's result.
	Output string `json:"-"`
}

// Counts are over tests that ran to a verdict; a test made only of subtests
// counts through its subtests.
type Counts struct {
	Total   int `json:"total"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	Errors  int `json:"errors"` // errors outside a test body (setup, collection)
}

// Failure is one failed test, as much as a model needs to fix it.
type Failure struct {
	ID      string `json:"id"`
	File    string `json:"file,omitempty"` // relative to the run's directory when inside it
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`           // first line
	Excerpt string `json:"excerpt,omitempty"` // at most 40 lines
	Kind    string `json:"kind"`
}

// BuildError is one compiler (or vet) error that kept the tests from running.
type BuildError struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
	Message string `json:"message"`
}

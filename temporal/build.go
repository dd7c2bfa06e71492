package temporal

import (
	"fmt"
	"os"
	"strconv"

	"go.temporal.io/sdk/workflow"

	"github.com/planrunner/runner/internal/sys/boot"
)

// workflowCode is the version of the workflow code. Bump it, in the same
// commit, whenever a worker without the change cannot serve a run
// started or continued with it: a new workflow.GetVersion change, an
// Input field the workflow relies on, a plan feature older workers'
// engine refuses. A run records the version of the client that started
// it (Input.Code) and, in its history, the newest version that served it
// (the GetVersion change codeVersionChange); a worker whose code is older
// than either leaves the run's workflow tasks to a newer worker instead
// of failing the run (checkCodeVersion). Input fields are only ever
// added, never retyped: an older worker must still decode the input to
// see that the run is not for it.
//
// It is a string only so that a test can build an older worker with
// -ldflags "-X github.com/planrunner/runner/temporal.workflowCode=N".
var workflowCode = "4"

var codeVersion = func() int {
	v, err := strconv.Atoi(workflowCode)
	if err != nil || v < 1 {
		panic(fmt.Sprintf("temporal.workflowCode %q: want a number, 1 or more", workflowCode))
	}
	return v
}()

// WorkflowCodeVersion is the version of this binary's workflow code.
func WorkflowCodeVersion() int { return codeVersion }

// codeVersionChange is the GetVersion change id under which a run's
// history records the newest workflow code version that served it.
const codeVersionChange = "runner.workflow-code"

// CodeVersionMemo is the memo key of the workflow code version of the
// client that started a run (what `temporal workflow describe` shows).
const CodeVersionMemo = "runner.workflow_code"

// tooOld is the panic of a worker whose code cannot serve a run: a panic
// in workflow code fails the workflow task, which Temporal hands again
// (to this or another worker) until one can serve it (the SDK's default
// panic policy, BlockWorkflow); the run is never failed for it.
type tooOld string

func (t tooOld) String() string { return string(t) }

func tooOldMessage(need int) tooOld {
	return tooOld(fmt.Sprintf("this worker (%s, on %s) has workflow code version %d; the run needs version %d or newer: "+
		"its tasks wait for a newer worker (start one; see docs/temporal.md, Upgrades)", Build(), hostname(), codeVersion, need))
}

// errCodeTooOld is the type of a step's error when the worker's workflow
// code is older than the run's: the step fails at once, not retried.
const errCodeTooOld = "runner.code-too-old"

// codeTooOld says why a worker refuses a step: a run that a newer build
// started or served may hand it input this build does not read (a field
// it would drop, a board chunk it would not put), so it would run the step
// against another board than the run's. A newer worker serves an older
// run's steps: inputs only gain fields.
func codeTooOld(need int, run, step string) error {
	return fmt.Errorf("this worker (%s, on %s) has workflow code version %d; run %s needs version %d or newer: "+
		"its step %s is not run here (upgrade this worker; see docs/temporal.md, Upgrades)", Build(), hostname(), codeVersion, run, need, step)
}

// checkCodeVersion is the workflow's first act: it panics (leaving the
// task to a newer worker) when this worker's code is older than the
// client that started the run, or than a worker that served it before;
// otherwise it records this version in the history (a newer one than the
// history holds only on a run's first task) and returns the version the
// run needs from now on, which a continued run carries in its input.
func checkCodeVersion(ctx workflow.Context, need int) int {
	if need > codeVersion {
		panic(tooOldMessage(need))
	}
	var v workflow.Version
	func() {
		// GetVersion panics with the SDK's own words when the history holds
		// a newer version than codeVersion; say it as ours.
		defer func() {
			if r := recover(); r != nil {
				panic(tooOldMessage(codeVersion + 1))
			}
		}()
		v = workflow.GetVersion(ctx, codeVersionChange, workflow.DefaultVersion, workflow.Version(codeVersion))
	}()
	return max(need, int(v))
}

// Build names this binary's build: its workflow code version, module
// version and VCS revision (from the Go build information).
func Build() string {
	s := "workflow code " + workflowCode
	module, rev, modified := boot.BuildInfo()
	if module != "" {
		s += ", " + module
	}
	if rev != "" {
		s += ", revision " + rev
		if modified {
			s += " (modified)"
		}
	}
	return s
}

// WorkerIdentity is the identity a worker gives Temporal, shown in each
// history event it records and among a task queue's pollers: its process,
// host and build.
func WorkerIdentity() string {
	return fmt.Sprintf("%d@%s %s", os.Getpid(), hostname(), Build())
}

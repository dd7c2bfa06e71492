package temporal

import (
	"time"

	"github.com/planrunner/runner/internal/engine"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Quick command steps as local activities. A normal activity
// costs a round trip through the server's task queue and three history
// events (scheduled, started, completed); a local activity runs on the
// worker that runs the workflow task, in that task, and leaves one
// marker event. The catch: a local activity has no heartbeat, so a
// worker that dies in the middle of one is noticed only when its task
// times out. So only steps with a bounded run qualify: a step whose type
// stops itself at its timeout (engine.Caps.Bounded: command) and whose
// own `timeout` is at most --local-steps-under (off by default).
// A run pinned to a host (its workspace travels with it) must run its
// steps on that host, and the workflow task may be on any worker: once
// the run has a host, a quick step is tried as a local activity that
// runs only on the host (StepInput.OnlyHost). The worker that ran the
// run's last workflow task usually gets its next (Temporal's sticky
// queue), and a worker that serves the workflow and pins the run is
// often both; another worker says so without running anything, and the
// run's steps go to the host's queue from then on (until it moves).

// localSteps versions the change: runs started before it send every
// step to the task queue, as recorded.
const localSteps = "local-activities"

// localOnHost versions local activities on a pinned run's host: runs
// started before it send a pinned run's every step to its host's queue.
const localOnHost = "local-activities-on-host"

// localSlack is what a local activity's timeout adds to the step's own:
// the step stops itself at its timeout; this bounds the rest (reading
// the board, saving the output).
const localSlack = 30 * time.Second

// asLocal reports whether step n runs as a local activity.
func (it *interp) asLocal(ctx workflow.Context, n *engine.Node) bool {
	lim := it.opt.LocalStepsUnder
	if lim <= 0 || !engine.CapsOf(n.Kind).Bounded || n.Timeout <= 0 || n.Timeout > lim || it.pinned(ctx) {
		return false
	}
	return workflow.GetVersion(ctx, localSteps, workflow.DefaultVersion, 1) >= 1
}

// asLocalOnHost reports whether step n of a pinned run is tried as a
// local activity on its host.
func (it *interp) asLocalOnHost(ctx workflow.Context, n *engine.Node) bool {
	lim := it.opt.LocalStepsUnder
	if lim <= 0 || !engine.CapsOf(n.Kind).Bounded || n.Timeout <= 0 || n.Timeout > lim ||
		it.host == "" || it.shared || it.host == it.notHost {
		return false
	}
	return workflow.GetVersion(ctx, localOnHost, workflow.DefaultVersion, 1) >= 1
}

// runLocal runs one attempt of a step as a local activity, with the same
// input and output as RunStep's activity (its records, attempts and
// recordings are those of a normal activity). Temporal's retries of a
// lost attempt are the same policy's; a canceled local activity's
// context is canceled, which stops the step's processes as for a normal
// one, but its partial output is not handed back.
func (it *interp) runLocal(ctx workflow.Context, n *engine.Node, in StepInput, out *StepOutput) error {
	lo := workflow.LocalActivityOptions{
		StartToCloseTimeout: n.Timeout + localSlack,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: 30 * time.Second, MaximumAttempts: 20, NonRetryableErrorTypes: []string{errBadInput}},
	}
	if workflow.GetVersion(ctx, namedActivities, workflow.DefaultVersion, 1) >= 1 {
		lo.Summary = activitySummary(n)
	}
	lctx := workflow.WithLocalActivityOptions(ctx, lo)
	return workflow.ExecuteLocalActivity(lctx, ActivityName, in).Get(lctx, out)
}

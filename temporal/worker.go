package temporal

import (
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/planrunner/runner/internal/sys/boot"
)

// DefaultTaskQueue is the task queue workers poll and runs go to.
const DefaultTaskQueue = boot.DefaultTaskQueue

// Register puts the interpreter workflow and the step activity on r (a
// worker, a replayer or a test environment).
func Register(r worker.WorkflowRegistry, wf *Workflow, acts *Activities) {
	r.RegisterWorkflowWithOptions(wf.Run, workflow.RegisterOptions{Name: WorkflowName})
	if ar, ok := r.(worker.ActivityRegistry); ok && acts != nil {
		registerActivities(ar, acts)
	}
}

// WorkflowTaskBudget is how long one workflow task may run before the SDK
// takes it for a deadlock (its default is one second). A continued run
// rebuilds its whole board in the task, and a history from before
// storeActivities reads and writes the blob store in it: on a busy host
// that can take longer than a second without anything being wrong.
const WorkflowTaskBudget = 30 * time.Second

// NewWorker makes a worker that runs plans' workflows and steps from queue.
func NewWorker(c client.Client, queue string, acts *Activities, opt worker.Options) worker.Worker {
	if opt.DeadlockDetectionTimeout == 0 {
		opt.DeadlockDetectionTimeout = WorkflowTaskBudget
	}
	w := worker.New(c, queue, opt)
	if acts.health == nil {
		acts.health = healthCheck(c)
	}
	Register(w, &Workflow{Store: acts.Store}, acts)
	return w
}

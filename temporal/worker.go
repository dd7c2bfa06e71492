package temporal

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// DefaultTaskQueue is the task queue workers poll and runs go to.
const DefaultTaskQueue = "runner"

// Register puts the interpreter workflow and the step activity on r (a
// worker, a replayer or a test environment).
func Register(r worker.WorkflowRegistry, wf *Workflow, acts *Activities) {
	r.RegisterWorkflowWithOptions(wf.Run, workflow.RegisterOptions{Name: WorkflowName})
	if ar, ok := r.(worker.ActivityRegistry); ok && acts != nil {
		ar.RegisterActivityWithOptions(acts.RunStep, activity.RegisterOptions{Name: ActivityName})
	}
}

// NewWorker makes a worker that runs plans' workflows and steps from queue.
func NewWorker(c client.Client, queue string, acts *Activities, opt worker.Options) worker.Worker {
	w := worker.New(c, queue, opt)
	Register(w, &Workflow{Store: acts.Store}, acts)
	return w
}

package steps

import "github.com/planrunner/runner/engine"

// How a scheduler that is not one process (Temporal) runs these types:
// every other type touches the world and runs as an activity.

func (branchType) Sched() engine.Sched { return engine.SchedPure }
func (boardType) Sched() engine.Sched  { return engine.SchedPure }
func (inputType) Sched() engine.Sched  { return engine.SchedWaits }

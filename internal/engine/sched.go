package engine

// Sched is what a step type is for a scheduler that does not run every
// step the same way: a Temporal workflow runs pure steps inline (replaying
// them is deterministic), waits durably for a person's answer, and sends
// everything else to a worker as an activity. In one process every step
// runs alike.
type Sched int

const (
	// SchedWorld: the step touches the world (processes, files, models):
	// it runs where the work is. The default.
	SchedWorld Sched = iota
	// SchedPure: the step only reads and writes the board.
	SchedPure
	// SchedWaits: the step waits for a person's answer (ErrWaiting until
	// there is one).
	SchedWaits
)

// Scheduled is implemented by a step Type that is not SchedWorld.
type Scheduled interface {
	Sched() Sched
}

// SchedOf is how t is scheduled: SchedWorld unless it says otherwise.
func SchedOf(t Type) Sched {
	if s, ok := t.(Scheduled); ok {
		return s.Sched()
	}
	return SchedWorld
}

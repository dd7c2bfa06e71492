package runs

import (
	"encoding/json"
	"github.com/planrunner/runner/internal/board/boardlock"
	"sort"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/sys/readlimit"
	"github.com/planrunner/runner/internal/sys/safefs"
)

// RunningPath is the file beside a live run's blackboard.json that lists
// the step visits running now. The board records a visit when it ends;
// this says which have begun, for `runner serve` (a change of the run's
// directory, so a page following it hears of a step as it starts). It is
// removed when the run stops, and trusted only while the run's process
// lives (ReadRunning).
func RunningPath(boardPath string) string { return boardPath + ".running" }

// RunningStep is a step visit that has started and not ended.
type RunningStep struct {
	Label  string    `json:"label"`
	Visit  int       `json:"visit"`
	Parent string    `json:"parent,omitempty"`
	Since  time.Time `json:"since"`
}

// runningFile is the engine.Observer that keeps RunningPath current, and
// tells next (the progress display) too. The engine calls it from the
// goroutines of parallel steps.
type runningFile struct {
	next engine.Observer
	path string
	mu   sync.Mutex
	now  map[string]RunningStep
}

func trackRunning(boardPath string, next engine.Observer) *runningFile {
	return &runningFile{next: next, path: RunningPath(boardPath), now: map[string]RunningStep{}}
}

func (r *runningFile) StepStarted(label string, visit int, parent string) {
	if r.next != nil {
		r.next.StepStarted(label, visit, parent)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now[label+"#"+itoa(visit)] = RunningStep{Label: label, Visit: visit, Parent: parent, Since: time.Now().UTC()}
	r.write()
}

func (r *runningFile) StepFinished(rec board.StepRecord) {
	if r.next != nil {
		r.next.StepFinished(rec)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.now, rec.Label+"#"+itoa(rec.Visit))
	r.write()
}

// write replaces the file at once (a temporary file renamed), so a reader
// never sees half of it. It is best effort: the run does not depend on it.
func (r *runningFile) write() {
	list := make([]RunningStep, 0, len(r.now))
	for _, s := range r.now {
		list = append(list, s)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Since.Before(list[j].Since) })
	data, _ := json.Marshal(list)
	safefs.Replace(r.path, data, board.FileMode)
}

func (r *runningFile) close() { safefs.Remove(r.path) }

// ReadRunning lists the step visits the run at boardPath is running now,
// oldest first; none when its process is not running it (a file left by
// a killed run says nothing).
func ReadRunning(boardPath string) []RunningStep {
	if !liveOwner(boardPath) {
		return nil
	}
	data, err := readlimit.Regular(RunningPath(boardPath), readlimit.Board)
	if err != nil {
		return nil
	}
	var list []RunningStep
	if json.Unmarshal(data, &list) != nil {
		return nil
	}
	return list
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// LiveProcess is the process of this machine that runs the run saved at
// path now (a run or resume holding its lock), or 0 when none does. The
// lock itself is asked, not only its owner record: a process that has
// ended its run may not have exited yet, and its record is rewritten as
// it lets go.
func LiveProcess(path string) int {
	if !lockHeld(path) {
		return 0
	}
	o, err := boardlock.ReadOwner(path)
	if err != nil || o.Kind != boardlock.OwnerRun {
		return 0
	}
	return o.PID
}

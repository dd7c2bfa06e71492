package runs

import (
	"encoding/json"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/planrunner/runner/internal/agents"
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
	// Answer is the end (at most answerTail bytes) of the model answer
	// the visit is streaming now, masked.
	Answer string `json:"answer,omitempty"`
}

// answerTail bounds the streamed answer RunningPath holds per visit: a
// page shows how the answer goes on, the recording holds it whole.
const answerTail = 4096

// answerEvery is the shortest time between two writes of RunningPath
// for a streamed answer: a model sends many small pieces a second.
const answerEvery = 250 * time.Millisecond

// runningFile is the engine.Observer that keeps RunningPath current, and
// tells next (the progress display) too. The engine calls it from the
// goroutines of parallel steps.
type runningFile struct {
	next engine.Observer
	path string
	mu   sync.Mutex
	now  map[string]RunningStep
	// A streamed answer's pieces not written yet wait for flush.
	flush *time.Timer
}

// streamed adds a piece of a streamed answer to its visit's Answer; the
// file is written at most every answerEvery.
func (r *runningFile) streamed(c agents.StreamChunk) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := c.Label + "#" + itoa(c.Visit)
	s, ok := r.now[k]
	if !ok {
		return
	}
	s.Answer += c.Text
	if len(s.Answer) > answerTail {
		s.Answer = s.Answer[len(s.Answer)-answerTail:]
		for !utf8.ValidString(s.Answer) && s.Answer != "" {
			s.Answer = s.Answer[1:]
		}
	}
	r.now[k] = s
	if r.flush == nil {
		r.flush = time.AfterFunc(answerEvery, func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.flush = nil
			if r.now != nil {
				r.write()
			}
		})
	}
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

func (r *runningFile) close() {
	r.mu.Lock()
	if r.flush != nil {
		r.flush.Stop()
	}
	r.now = nil // a flush still to come writes nothing
	r.mu.Unlock()
	safefs.Remove(r.path)
}

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

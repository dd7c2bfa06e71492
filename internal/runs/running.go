package runs

import (
	"encoding/json"
	"io"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

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
	// Answer is the end of a model's answer as it streams (an agent with
	// `stream: true`), at most answerTail bytes; the board gets the whole
	// answer when the call ends.
	Answer string `json:"answer,omitempty"`
}

// answerTail bounds RunningStep.Answer: what a page shows of an answer
// under way, not the answer.
const answerTail = 4 << 10

// answerEvery spaces the file's rewrites as an answer streams in.
const answerEvery = 250 * time.Millisecond

// runningFile is the engine.Observer that keeps RunningPath current, and
// tells next (the progress display) too. The engine calls it from the
// goroutines of parallel steps.
type runningFile struct {
	next    engine.Observer
	path    string
	mu      sync.Mutex
	now     map[string]RunningStep
	written time.Time // the file's last rewrite
	pending bool      // an answer came in since, and a rewrite is due
	closed  bool
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

// output is the engine.Runner.Output of a run: next's (--show-output),
// and a streamed answer (stream "answer") also into the file, so that
// `runner serve` shows it as it comes.
func (r *runningFile) output(next func(label string, visit int, stream string) io.Writer) func(label string, visit int, stream string) io.Writer {
	return func(label string, visit int, stream string) io.Writer {
		var w io.Writer
		if next != nil {
			w = next(label, visit, stream)
		}
		if stream != "answer" {
			return w
		}
		mine := answerWriter{r: r, key: label + "#" + itoa(visit)}
		if w == nil {
			return mine
		}
		return io.MultiWriter(w, mine)
	}
}

// answerWriter appends a streamed answer to its step visit's entry.
type answerWriter struct {
	r   *runningFile
	key string
}

func (a answerWriter) Write(p []byte) (int, error) {
	r := a.r
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.now[a.key]
	if !ok {
		return len(p), nil
	}
	s.Answer += string(p)
	if len(s.Answer) > answerTail {
		cut := len(s.Answer) - answerTail
		for cut < len(s.Answer) && !utf8.RuneStart(s.Answer[cut]) {
			cut++
		}
		s.Answer = s.Answer[cut:]
	}
	r.now[a.key] = s
	switch {
	case time.Since(r.written) >= answerEvery:
		r.write()
	case !r.pending:
		// What came in since is written when its time comes, even if
		// nothing more does.
		r.pending = true
		time.AfterFunc(answerEvery-time.Since(r.written), func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.pending && !r.closed {
				r.write()
			}
		})
	}
	return len(p), nil
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
	r.written, r.pending = time.Now(), false
}

func (r *runningFile) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
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

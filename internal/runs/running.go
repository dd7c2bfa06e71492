package runs

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/bigjson"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/sys/readlimit"
	"github.com/planrunner/runner/internal/sys/safefs"
)

// RunningPath is the file beside a live run's blackboard.json that says
// which step visits are running now. The board records a visit when it
// ends; this says which have begun, for `runner serve` (a change of the
// run's directory, so a page following it hears of a step as it starts).
// It is a log of JSON lines, one as each visit starts and one as it ends
// (and, while a visit streams a model's answer, one now and then with the
// answer's end), so what a step writes is its own line whatever else
// runs; it is
// rewritten with only the visits still running once it has grown to
// several times their size. It is removed when the run stops, and
// trusted only while the run's process lives (ReadRunning).
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

// runningLine is a line of the running file: a visit that started, one
// whose streamed answer goes on (Answer, no Since), or (End) one that
// ended.
type runningLine struct {
	RunningStep
	End bool `json:"end,omitempty"`
}

// compactAt is the least size of the running file that is rewritten:
// below it a few kilobytes of ended visits cost less to read than a
// rewrite costs to make.
const compactAt = 64 << 10

// answerTail bounds the streamed answer RunningPath holds per visit: a
// page shows how the answer goes on, the recording holds it whole.
const answerTail = 4096

// answerEvery is the shortest time between two answer lines: a model
// sends many small pieces a second.
const answerEvery = 250 * time.Millisecond

// runningFile is the engine.Observer that keeps RunningPath current, and
// tells next (the progress display) too. The engine calls it from the
// goroutines of parallel steps; what it does under its lock is one line's
// append, and now and then (amortized over the lines since) a rewrite.
type runningFile struct {
	next engine.Observer
	path string
	// board serves the streamed answers to the live board's clients
	// (nil: the board is not served); they are never written to a file.
	board *liveboard.Server

	mu      sync.Mutex
	f       *os.File          // nil until the first visit starts, or after a failure
	failed  bool              // the file could not be made: nothing more is tried
	now     map[string][]byte // a running visit's key: its start line
	answer  map[string]string // a streaming visit's key: its answer's end
	said    map[string][]byte // a streaming visit's key: its last answer line
	dirty   map[string]bool   // visits whose answer went on since its last line
	flush   *time.Timer       // writes the dirty answers; nil when none waits
	live    int               // the bytes of the lines in now and said
	written int               // the file's size
	buf     []byte
}

// streamed adds a piece of a streamed answer to its visit's answer; a
// line with the answer's end is written at most every answerEvery.
func (r *runningFile) streamed(c agents.StreamChunk) {
	if r.board != nil {
		r.board.Streamed(c.Label, c.Visit, c.Call, c.Text)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := visitKey(c.Label, c.Visit)
	if _, ok := r.now[k]; !ok || r.failed {
		return
	}
	a := r.answer[k] + c.Text
	if len(a) > answerTail {
		a = a[len(a)-answerTail:]
		for !utf8.ValidString(a) && a != "" {
			a = a[1:]
		}
	}
	r.answer[k] = a
	r.dirty[k] = true
	if r.flush == nil {
		r.flush = time.AfterFunc(answerEvery, r.flushAnswers)
	}
}

// flushAnswers writes an answer line for each visit whose answer went on.
func (r *runningFile) flushAnswers() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flush = nil
	for k := range r.dirty {
		delete(r.dirty, k)
		start, ok := r.now[k]
		if !ok {
			continue
		}
		var l runningLine
		if json.Unmarshal(start, &l) != nil {
			continue
		}
		b := append([]byte(`{"label":`), bigjson.AppendString(nil, l.Label)...)
		b = append(b, `,"visit":`...)
		b = strconv.AppendInt(b, int64(l.Visit), 10)
		b = append(b, `,"answer":`...)
		b = bigjson.AppendString(b, r.answer[k])
		b = append(b, "}\n"...)
		r.live += len(b) - len(r.said[k])
		r.said[k] = b
		r.append(b)
	}
}

func trackRunning(boardPath string, next engine.Observer, live *liveboard.Server) *runningFile {
	return &runningFile{next: next, path: RunningPath(boardPath), board: live, now: map[string][]byte{},
		answer: map[string]string{}, said: map[string][]byte{}, dirty: map[string]bool{}}
}

func visitKey(label string, visit int) string { return label + "#" + strconv.Itoa(visit) }

func (r *runningFile) StepStarted(label string, visit int, parent string) {
	if r.next != nil {
		r.next.StepStarted(label, visit, parent)
	}
	since := time.Now().UTC()
	r.mu.Lock()
	defer r.mu.Unlock()
	line := r.line(label, visit, parent, since, false)
	// Appended before it is in now, which a rewrite writes.
	r.append(line)
	r.now[visitKey(label, visit)] = line
	r.live += len(line)
}

func (r *runningFile) StepFinished(rec board.StepRecord) {
	if r.next != nil {
		r.next.StepFinished(rec)
	}
	if r.board != nil {
		r.board.StepEnded(rec.Label, rec.Visit)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := visitKey(rec.Label, rec.Visit)
	start, ok := r.now[k]
	if !ok {
		return
	}
	delete(r.now, k)
	r.live -= len(start) + len(r.said[k])
	delete(r.answer, k)
	delete(r.said, k)
	delete(r.dirty, k)
	r.append(r.line(rec.Label, rec.Visit, "", time.Time{}, true))
}

// line encodes a line of the file (as encoding/json would runningLine). A
// start line is kept (in now) and so has its own memory; an end line is
// built in r.buf.
func (r *runningFile) line(label string, visit int, parent string, since time.Time, end bool) []byte {
	var b []byte
	if end {
		b = r.buf[:0]
	} else {
		b = make([]byte, 0, 64+len(label)+len(parent))
	}
	b = append(b, `{"label":`...)
	b = bigjson.AppendString(b, label)
	b = append(b, `,"visit":`...)
	b = strconv.AppendInt(b, int64(visit), 10)
	if parent != "" {
		b = append(b, `,"parent":`...)
		b = bigjson.AppendString(b, parent)
	}
	if end {
		b = append(b, `,"end":true}`+"\n"...)
		r.buf = b
		return b
	}
	b = append(b, `,"since":"`...)
	b = since.AppendFormat(b, time.RFC3339Nano)
	return append(b, "\"}\n"...)
}

// append writes a line at the file's end (one write(2): a reader sees it
// whole or not at all), or rewrites the file with the visits running now
// once the ended ones make most of it. It is best effort: the run does
// not depend on the file.
func (r *runningFile) append(line []byte) {
	if r.failed {
		return
	}
	if r.f != nil && r.written >= compactAt && r.written > 4*r.live {
		r.f.Close()
		r.f = nil
	}
	if r.f == nil {
		r.rewrite()
		if r.f == nil {
			return
		}
	}
	n, err := r.f.Write(line)
	r.written += n
	if err != nil {
		r.f.Close()
		r.f, r.failed = nil, true
	}
}

// rewrite replaces the file at once (a temporary file renamed, so a
// reader sees the old file or the new one) with the start lines of the
// visits running now, and opens it to append to.
func (r *runningFile) rewrite() {
	data := make([]byte, 0, r.live)
	for k, l := range r.now {
		data = append(data, l...)
		data = append(data, r.said[k]...)
	}
	if err := safefs.Replace(r.path, data, board.FileMode); err != nil {
		r.failed = true
		return
	}
	f, err := safefs.OpenFile(r.path, os.O_WRONLY|os.O_APPEND, board.FileMode)
	if err != nil {
		r.failed = true
		return
	}
	r.f, r.written = f, len(data)
}

func (r *runningFile) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.flush != nil {
		r.flush.Stop()
		r.flush = nil
	}
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
	r.failed = true // a flush still to come writes nothing
	safefs.Remove(r.path)
}

// ReadRunning lists the step visits the run at boardPath is running now,
// oldest first; none when its process is not running it (a file left by
// a killed run says nothing).
func ReadRunning(boardPath string) []RunningStep {
	if !liveOwner(boardPath) {
		return nil
	}
	return readRunningFile(RunningPath(boardPath))
}

// readRunningFile lists the visits the running file at path has started
// and not ended, oldest first. A last line without its newline is being
// written: it is left out.
func readRunningFile(path string) []RunningStep {
	data, err := readlimit.Regular(path, readlimit.Board)
	if err != nil {
		return nil
	}
	at := map[string]int{}
	var list []RunningStep
	var ended []bool
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		var l runningLine
		if json.Unmarshal(data[:i], &l) == nil {
			k := visitKey(l.Label, l.Visit)
			switch {
			case l.End:
				if j, ok := at[k]; ok {
					ended[j] = true
					delete(at, k)
				}
			case l.Since.IsZero():
				if j, ok := at[k]; ok {
					list[j].Answer = l.Answer
				}
			default:
				at[k] = len(list)
				list = append(list, l.RunningStep)
				ended = append(ended, false)
			}
		}
		data = data[i+1:]
	}
	n := 0
	for i, s := range list {
		if !ended[i] {
			list[n] = s
			n++
		}
	}
	list = list[:n]
	slices.SortStableFunc(list, func(a, b RunningStep) int { return a.Since.Compare(b.Since) })
	return list
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

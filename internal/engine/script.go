package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// Recording kinds the engine makes, beside the agents' model exchanges:
// what a run saw that a replay cannot work out again by itself.
const (
	// KindClock is a clock reading that can change what the run does (a
	// TTL's expiry, now() in an expression): Call numbers the readings of
	// a step visit, Response is the time as a JSON string.
	KindClock = "clock"
	// KindRead is what a key read by a child of a parallel group found:
	// such a read races with its siblings' writes, and a replay runs the
	// children one at a time. Call numbers the reads of a step visit;
	// Response is a ReadSeen.
	KindRead = "read"
	// KindResume marks where `runner resume` took a run over: Call numbers
	// the resumes, Response is a ResumeMark.
	KindResume = "resume"
)

// ResumeMark is the Response of a KindResume recording: how much the run
// had saved when it was resumed, and how it had ended.
type ResumeMark struct {
	Steps      int    `json:"steps"`
	Entries    int    `json:"entries"`
	Recordings int    `json:"recordings"`
	Status     string `json:"status"` // running (it was killed), interrupted, failed
	Error      string `json:"error,omitempty"`
}

// ReadSeen is the Response of a KindRead recording.
type ReadSeen struct {
	Key     string `json:"key"`
	Found   bool   `json:"found"`
	Version int64  `json:"version,omitempty"`
	Writes  int64  `json:"writes,omitempty"` // the key's writes so far (Board.Version)
}

// A Script feeds a replay what its recording decided: the engine asks it
// wherever a live run would read the world, the clock or a race. Every
// method may answer "not recorded" (ok false, zero), and the engine then
// does what a live run does. Package replay implements it.
type Script interface {
	// Result serves a step visit's saved result instead of running the
	// step (an offline replay's command, test and apply_diff steps).
	Result(label string, visit int) (rec board.StepRecord, ok bool)
	// Order gives the order a parallel group's children finished in: the
	// replay runs them one at a time in that order.
	Order(group string, visit int) (labels []string, ok bool)
	// Canceled says how a failed sibling's fail_fast treated a child.
	Canceled(label string, visit int) Cancel
	// Times are a step visit's recorded start and finish.
	Times(label string, visit int) (start, finish time.Time, ok bool)
	// Clock is the call-th clock reading of a step visit.
	Clock(label string, visit, call int) (time.Time, bool)
	// Read is what the call-th key read of a step visit found, for the
	// children of parallel groups (see KindRead).
	Read(label string, visit, call int) (ReadSeen, bool)
	// Cut is the cause the run's context ended with while this visit ran
	// (limits.timeout, an interrupt): the replay ends the run the same way
	// as the visit starts.
	Cut(label string, visit int) error
	// CutAfter is Cut for a parallel group whose children all finished
	// before the cause ended the run: it is asked when they have.
	CutAfter(label string, visit int) error
	// Ends reports that the recording (or its part before a resume) ends
	// before this visit: the process was killed or interrupted first.
	Ends(label string, visit int) bool
	// EndsAfter reports that the recording's part ends between a group's
	// children and the group's own record: the process was killed after
	// the last child finished, so the group is finished by the resume.
	EndsAfter(label string, visit int) bool
}

// StopScript is what a replay's Script may add: whether a recorded step
// visit ended cut short by the run's stop (Interrupted), rather than
// before it.
type StopScript interface {
	Stopped(label string, visit int) bool
}

// Cancel is how fail_fast treated a group's child.
type Cancel int

const (
	NotCanceled Cancel = iota
	CanceledRunning
	CanceledNotStarted
)

// CanceledBy says whether a saved record is a child that a failed
// sibling's fail_fast canceled, and whether it had started.
func CanceledBy(rec board.StepRecord) Cancel {
	switch {
	case rec.Parent == "" || !strings.Contains(rec.Error, errSiblingFailed.Error()):
		return NotCanceled
	case strings.HasPrefix(rec.Error, notStartedPrefix):
		return CanceledNotStarted
	}
	return CanceledRunning
}

const notStartedPrefix = "not started: "

// Interrupted reports whether a saved step record is a visit that Ctrl-C
// (or the run's end) cut short: status canceled, not by a sibling, or
// interrupted in files saved before the canceled status.
func Interrupted(rec board.StepRecord) bool {
	return rec.Status == StatusInterrupted || (rec.Status == StatusCanceled && CanceledBy(rec) == NotCanceled)
}

// ErrEnded ends a replayed part of a run where its recording ends (see
// Script.Ends); nothing is recorded for the visits it stops.
var ErrEnded = errors.New("the recording ends here")

// TimeoutCause is the cause limits.timeout ends a run with.
func TimeoutCause(d time.Duration) error {
	return &timeoutError{d}
}

type timeoutError struct{ d time.Duration }

func (e *timeoutError) Error() string { return errRunTimeout.Error() + " (" + e.d.String() + ")" }
func (e *timeoutError) Unwrap() error { return errRunTimeout }

// IsTimeout reports whether a run's error text says limits.timeout ended it.
func IsTimeout(runErr string) bool { return strings.Contains(runErr, errRunTimeout.Error()) }

// savedErr is a replayed step's recorded error, text for text.
type savedErr struct {
	text    string
	sibling bool // fail_fast canceled the step
}

func (e *savedErr) Error() string { return e.text }
func (e *savedErr) Is(target error) bool {
	return e.sibling && target == errSiblingFailed
}

// now is the time for a decision of a step visit: the recorded reading in
// a replay, else the clock, recorded for the replay to come.
func (r *Runner) now(label string, visit int) time.Time {
	k := visitKey{label, visit}
	r.mu.Lock()
	r.clockN[k]++
	n := r.clockN[k]
	r.mu.Unlock()
	if r.Script != nil {
		if t, ok := r.Script.Clock(label, visit, n); ok {
			r.recordClock(label, visit, n, t)
			return t
		}
	}
	t := time.Now().UTC()
	if r.Clock != nil {
		t = r.Clock()
	}
	r.recordClock(label, visit, n, t)
	return t
}

func (r *Runner) recordClock(label string, visit, n int, t time.Time) {
	raw := make([]byte, 0, 40) // a JSON string: the layout needs no escaping
	raw = append(t.AppendFormat(append(raw, '"'), time.RFC3339Nano), '"')
	// A reading that cannot be saved is one the replay will not find; the
	// run still goes on with it (the replay then reports where it differs).
	if err := r.Board.AddRecording(board.Recording{Label: label, Visit: visit, Kind: KindClock, Call: n, Response: raw}); err != nil {
		r.Log.Warn().Err(err).Msg("recording a clock reading")
	}
}

// ClockReading decodes a KindClock recording's time.
func ClockReading(rec board.Recording) (time.Time, bool) {
	var s string
	if json.Unmarshal(rec.Response, &s) != nil {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

type visitKey struct {
	label string
	visit int
}

// visitClock is a step visit's view of what can change under it: board()
// and now() in expressions read the visit's recorded clock and reads.
type visitClock struct {
	now   func() time.Time
	board func(key string) any
	read  func(author, key string) (KeyRead, error)
	item  *itemOf // the item and index of a for_each item's visit
	// files and read_file, recorded (workspace.go)
	files    func(string) ([]any, error)
	readFile func(string) (string, error)
	// args are a plan tool call's arguments (plantools.go), nil elsewhere
	args map[string]any
}

// KeyRead is what a step's key read found.
type KeyRead struct {
	Entry board.Entry
	Found bool
	// Writes is how many times the key was written (tombstones and
	// expired writes too): the next write gets Writes+1.
	Writes int64
}

func (r *Runner) clockFor(label string, visit int, inGroup bool) *visitClock {
	vc := &visitClock{}
	vc.now = func() time.Time { return r.now(label, visit) }
	vc.read = func(author, key string) (KeyRead, error) {
		return r.read(label, visit, inGroup, author, key, vc.now)
	}
	r.workspaceFuncs(label, visit, vc)
	vc.board = func(key string) any {
		if kr, _ := vc.read("", key); kr.Found {
			return kr.Entry.Content
		}
		return nil
	}
	return vc
}

// read is a key read of a step visit: through the reader's permissions and
// the visit's clock; in a parallel group, recorded, or served as recorded.
func (r *Runner) read(label string, visit int, inGroup bool, author, key string, now func() time.Time) (KeyRead, error) {
	writes := r.Board.Version(key)
	e, ok, err := r.Board.ReadAsAt(author, key, now)
	if err != nil || !inGroup {
		return KeyRead{e, ok, writes}, err
	}
	k := visitKey{label, visit}
	r.mu.Lock()
	r.readN[k]++
	n := r.readN[k]
	r.mu.Unlock()
	if r.Script != nil {
		if seen, rok := r.Script.Read(label, visit, n); rok && seen.Key == key {
			ok, writes = false, seen.Writes
			if seen.Found {
				e, ok = r.Board.KeyVersion(key, seen.Version)
			}
			if !ok {
				e = board.Entry{}
			}
		}
	}
	seen := ReadSeen{Key: key, Found: ok, Writes: writes}
	if ok {
		seen.Version = e.Version
	}
	raw, _ := json.Marshal(seen)
	if err := r.Board.AddRecording(board.Recording{Label: label, Visit: visit, Kind: KindRead, Call: n, Response: raw}); err != nil {
		r.Log.Warn().Err(err).Msg("recording a read")
	}
	return KeyRead{e, ok, writes}, nil
}

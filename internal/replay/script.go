package replay

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"slices"
	"sync/atomic"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
)

type visitKey struct {
	label string
	visit int
}

// segment is the part of a recording between two resumes: a run, then
// each `runner resume` of it.
//
// A segment holds where its records are in the recording, not copies of
// them: replaying a 100k-step run held each record twice (in order, and
// by visit), a third of the replay's memory.
type segment struct {
	rec      *board.Board
	from, to int // its records: rec's from to to-1
	// last is where the last record of each visit is, by the hash of
	// the visit (visitHash): 16 bytes a visit, where a map by label and
	// visit took 90 with the label's copy. A hash is checked against the
	// record it finds.
	last     []visitAt
	hash     func(visitKey) uint64 // visitHash (a test's own, to make hashes collide)
	children map[visitKey][]string // a group visit's children, in the order they finished
	groups   map[visitKey]bool     // group visits with a child in this segment
	status   string                // how the segment ended: succeeded, failed, interrupted, running (killed)
	err      string
	mark     *engine.ResumeMark // what the resume after it found (nil for the last segment)
}

// visitAt is where a visit's last record is (its index in the
// recording), by the visit's hash; sorted by hash, then index.
type visitAt struct {
	hash uint64
	i    int
}

// visitSeed seeds visitHash: the hashes are this process's own.
var visitSeed = maphash.MakeSeed()

func visitHash(k visitKey) uint64 {
	var h maphash.Hash
	h.SetSeed(visitSeed)
	h.WriteString(k.label)
	var v [8]byte
	binary.LittleEndian.PutUint64(v[:], uint64(k.visit))
	h.Write(v[:])
	return h.Sum64()
}

// find is where the segment's last record of visit k is, and the record.
func (s *segment) find(k visitKey) (int, board.StepRecord, bool) {
	h := s.hash(k)
	for j, _ := slices.BinarySearchFunc(s.last, h, func(a visitAt, h uint64) int { return cmp.Compare(a.hash, h) }); j < len(s.last) && s.last[j].hash == h; j++ {
		if r := s.rec.StepKeyed(s.last[j].i); r.Label == k.label && r.Visit == k.visit {
			return s.last[j].i, r, true
		}
	}
	return 0, board.StepRecord{}, false
}

// record is the segment's last record of visit k.
func (s *segment) record(k visitKey) (board.StepRecord, bool) {
	_, r, ok := s.find(k)
	return r, ok
}

// has reports whether the segment has a record of visit k.
func (s *segment) has(k visitKey) bool {
	_, _, ok := s.find(k)
	return ok
}

// len is how many records the segment holds.
func (s *segment) len() int { return s.to - s.from }

// index is where the segment's last record of visit k is, from 0.
func (s *segment) index(k visitKey) (int, bool) {
	i, _, ok := s.find(k)
	return i - s.from, ok
}

// at is the segment's record i, from 0.
func (s *segment) at(i int) board.StepRecord { return s.rec.StepKeyed(s.from + i) }

func (s *segment) complete() bool {
	return s.status == board.StatusSucceeded || s.status == board.StatusFailed
}

// script is the recording as the engine asks for it (engine.Script), one
// segment at a time.
type script struct {
	rec     *board.Board
	segs    []*segment
	clock   map[clockKey]time.Time
	reads   map[clockKey]engine.ReadSeen
	items   map[visitKey]json.RawMessage // for_each lists (engine.ItemsScript)
	ws      map[clockKey]board.Recording // files() and read_file() (engine.WorkspaceScript)
	offline bool
	caps    func(label string) engine.Caps // a recorded label's step type's (StepCaps)
	timeout time.Duration                  // the plan's limits.timeout
	fork    *fork
	seg     int
	virtual atomic.Int64 // the replayed clock, for the board's own stamps (UnixNano)
}

func (s *script) Read(label string, visit, call int) (engine.ReadSeen, bool) {
	if s.live() {
		return engine.ReadSeen{}, false
	}
	r, ok := s.reads[clockKey{label, visit, call}]
	return r, ok
}

type clockKey struct {
	label       string
	visit, call int
}

func newScript(rec *board.Board, caps func(string) engine.Caps, timeout time.Duration, offline bool, fk *fork, parent func(string) string) *script {
	s := &script{rec: rec, clock: map[clockKey]time.Time{}, reads: map[clockKey]engine.ReadSeen{}, items: map[visitKey]json.RawMessage{}, ws: map[clockKey]board.Recording{},
		offline: offline, caps: caps, timeout: timeout, fork: fk}
	run := rec.Run()
	// Keyed: a large result stays its key (compared by it, check.go) and
	// is built whole only when a step is served from it (Result).
	steps := rec.NumSteps()
	start := 0
	for _, r := range rec.RecordingsKeyed() {
		switch r.Kind {
		case engine.KindClock, engine.KindRead, engine.KindWorkspace, engine.KindItems, engine.KindResume:
			// Read below whole; the rest (model answers) are served
			// through the agents' source, one at a time.
			r = r.Whole()
		}
		switch r.Kind {
		case engine.KindClock:
			if t, ok := engine.ClockReading(r); ok {
				k := clockKey{r.Label, r.Visit, r.Call}
				if _, dup := s.clock[k]; !dup {
					s.clock[k] = t
				}
			}
		case engine.KindRead:
			var seen engine.ReadSeen
			k := clockKey{r.Label, r.Visit, r.Call}
			if _, dup := s.reads[k]; !dup && json.Unmarshal(r.Response, &seen) == nil {
				s.reads[k] = seen
			}
		case engine.KindWorkspace:
			if k := (clockKey{r.Label, r.Visit, r.Call}); s.ws[k].Kind == "" {
				s.ws[k] = r
			}
		case engine.KindItems:
			if k := (visitKey{r.Label, r.Visit}); s.items[k] == nil {
				s.items[k] = r.Response
			}
		case engine.KindResume:
			var m engine.ResumeMark
			if json.Unmarshal(r.Response, &m) != nil || m.Steps < start || m.Steps > steps {
				continue
			}
			s.segs = append(s.segs, newSegment(rec, start, m.Steps, m.Status, m.Error, &m, parent))
			start = m.Steps
		}
	}
	s.segs = append(s.segs, newSegment(rec, start, steps, run.Status, run.Error, nil, parent))
	s.virtual.Store(run.StartedAt.UnixNano())
	return s
}

// newSegment indexes one part of a recording. parent (nil: none known)
// names the group holding a label: the groups above a record's own are
// marked entered too, since a part cut short may hold only the
// grandchildren of a group (an item's steps in a for_each sequence inside
// a parallel group).
func newSegment(rec *board.Board, from, to int, status, errText string, m *engine.ResumeMark, parent func(string) string) *segment {
	g := &segment{rec: rec, from: from, to: to, last: make([]visitAt, 0, to-from), hash: visitHash, children: map[visitKey][]string{},
		groups: map[visitKey]bool{}, status: status, err: errText, mark: m}
	for i := from; i < to; i++ {
		r := rec.StepKeyed(i)
		g.last = append(g.last, visitAt{g.hash(visitKey{r.Label, r.Visit}), i})
		if r.Parent != "" && !r.Spawned() { // a child's visit is its group's (a sub-agent's is its step's, no group)
			k := visitKey{r.Parent, r.Visit}
			g.children[k] = append(g.children[k], r.Label)
			g.groups[k] = true
			for p := r.Parent; parent != nil; {
				if p = parent(p); p == "" || g.groups[visitKey{p, r.Visit}] {
					break
				}
				g.groups[visitKey{p, r.Visit}] = true
			}
		}
	}
	g.last = lastOfEach(rec, g.last)
	return g
}

// lastOfEach sorts the places of records by hash, the last record of a
// visit first, and drops a visit's earlier records. Records that share
// a hash are different visits only by a chance of one in 2^64: each is
// read again then to tell. A record alone with its hash is not read
// again: in hash order, each read was another part of the file.
func lastOfEach(rec *board.Board, at []visitAt) []visitAt {
	slices.SortFunc(at, func(a, b visitAt) int { return cmp.Or(cmp.Compare(a.hash, b.hash), cmp.Compare(b.i, a.i)) })
	out := at[:0]
	for j := 0; j < len(at); {
		e := j
		for e < len(at) && at[e].hash == at[j].hash {
			e++
		}
		if e-j == 1 { // the common case, read from the file no more
			out = append(out, at[j])
			j = e
			continue
		}
		var kept []visitKey
		for _, v := range at[j:e] {
			r := rec.StepKeyed(v.i)
			if k := (visitKey{r.Label, r.Visit}); !slices.Contains(kept, k) {
				kept = append(kept, k)
				out = append(out, v)
			}
		}
		j = e
	}
	return slices.Clip(out)
}

func (s *script) cur() *segment { return s.segs[s.seg] }

func (s *script) live() bool { return s.fork != nil && s.fork.live.Load() }

func (s *script) setVirtual(t time.Time) {
	if !t.IsZero() {
		s.virtual.Store(t.UnixNano())
	}
}

// now is the board's clock during a replay: the last recorded time served.
func (s *script) now() time.Time {
	if s.live() {
		return time.Now()
	}
	return time.Unix(0, s.virtual.Load()).UTC()
}

func (s *script) record(label string, visit int) (board.StepRecord, bool) {
	return s.cur().record(visitKey{label, visit})
}

// Items is the item list a for_each visit had (engine.ItemsScript).
func (s *script) Items(label string, visit int) (json.RawMessage, bool) {
	if s.live() {
		return nil, false
	}
	raw, ok := s.items[visitKey{label, visit}]
	return raw, ok
}

// Workspace is the recorded answer of a files() or read_file() call
// (engine.WorkspaceScript).
func (s *script) Workspace(label string, visit, call int) (board.Recording, bool) {
	if s.live() {
		return board.Recording{}, false
	}
	r, ok := s.ws[clockKey{label, visit, call}]
	return r, ok
}

func (s *script) Result(label string, visit int) (board.StepRecord, bool) {
	// A person's answer always comes from the recording, the world's
	// offline; every other step runs again (engine.Replay).
	switch s.caps(label).Replay {
	case engine.ReplayRecorded:
	case engine.ReplayWorld:
		if !s.offline {
			return board.StepRecord{}, false
		}
	default:
		return board.StepRecord{}, false
	}
	if s.live() {
		return board.StepRecord{}, false
	}
	r, ok := s.record(label, visit)
	if ok && (finished(r) || engine.Interrupted(r)) {
		return r.Whole(), true
	}
	// The recording never ran this visit: the checker reports the path
	// that differs; the step fails rather than touching the world.
	return board.StepRecord{Label: label, Visit: visit, Status: engine.StatusFailed,
		Error: "replay: the recording has no result for this step visit"}, true
}

func (s *script) Order(group string, visit int) ([]string, bool) {
	if s.live() {
		return nil, false
	}
	return s.cur().children[visitKey{group, visit}], true
}

func (s *script) Canceled(label string, visit int) engine.Cancel {
	if s.live() {
		return engine.NotCanceled
	}
	r, ok := s.record(label, visit)
	if !ok {
		return engine.NotCanceled
	}
	return engine.CanceledBy(r)
}

func (s *script) Times(label string, visit int) (time.Time, time.Time, bool) {
	if s.live() {
		return time.Time{}, time.Time{}, false
	}
	r, ok := s.record(label, visit)
	if !ok {
		return time.Time{}, time.Time{}, false
	}
	s.setVirtual(r.StartedAt)
	return r.StartedAt, r.FinishedAt, true
}

// Stopped reports whether the recorded visit was cut short by the run's
// stop (engine.StopScript).
func (s *script) Stopped(label string, visit int) bool {
	if s.live() {
		return true
	}
	r, ok := s.record(label, visit)
	return !ok || engine.Interrupted(r)
}

func (s *script) Clock(label string, visit, call int) (time.Time, bool) {
	if s.live() {
		return time.Time{}, false
	}
	t, ok := s.clock[clockKey{label, visit, call}]
	if ok {
		s.setVirtual(t)
	}
	return t, ok
}

func (s *script) Cut(label string, visit int) error {
	if s.live() {
		return nil
	}
	g := s.cur()
	k := visitKey{label, visit}
	r, ok := g.record(k)
	switch {
	case g.groups[k]:
		return nil // a group is cut through its children
	case !ok && g.complete() && engine.IsTimeout(g.err) && s.timeout > 0:
		// The recording stopped before this visit: the timeout fired
		// between steps, or before a group's child started.
		return engine.TimeoutCause(s.timeout)
	case !ok || !engine.Interrupted(r):
		return nil
	case engine.IsTimeout(g.err) && s.timeout > 0:
		return engine.TimeoutCause(s.timeout)
	}
	return engine.ErrInterrupted
}

func (s *script) CutAfter(label string, visit int) error {
	if s.live() {
		return nil
	}
	g := s.cur()
	k := visitKey{label, visit}
	if r, ok := g.record(k); !ok || !g.groups[k] || !engine.Interrupted(r) {
		return nil
	}
	if engine.IsTimeout(g.err) && s.timeout > 0 {
		return engine.TimeoutCause(s.timeout)
	}
	return engine.ErrInterrupted
}

func (s *script) Ends(label string, visit int) bool {
	if s.live() {
		return false
	}
	g := s.cur()
	if g.complete() {
		return false
	}
	k := visitKey{label, visit}
	return !g.has(k) && !g.groups[k]
}

func (s *script) EndsAfter(label string, visit int) bool {
	if s.live() {
		return false
	}
	g := s.cur()
	if g.complete() {
		return false
	}
	k := visitKey{label, visit}
	return !g.has(k) && g.groups[k]
}

func finished(s board.StepRecord) bool {
	return s.Status == engine.StatusSucceeded || s.Status == engine.StatusFailed || s.Status == engine.StatusSkipped ||
		(s.Status == engine.StatusCanceled && engine.CanceledBy(s) != engine.NotCanceled)
}

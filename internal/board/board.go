package board

import (
	"errors"
	"fmt"
	"iter"
	"sort"
	"strings"
	"sync"
	"time"
)

// ErrVersion is returned when a compare-and-set write finds another version.
var ErrVersion = errors.New("version mismatch")

// ErrAbsent is returned when a delete finds no live key.
var ErrAbsent = errors.New("no such key")

// Board holds a run's entries, key-value view, step records and recordings.
// It is safe for concurrent use. Every change is handed to the journal (if
// any) before the method returns, so it survives the process being killed.
type Board struct {
	mu         sync.RWMutex
	run        Run
	entries    entryRows
	entryKinds map[entryKind]*entryKind // the kinds of its entries, once each (entryrow.go)
	lastKind   *entryKind               // the last entry's
	fields     *fieldIndex              // built by the first Query or KeyVersion that needs it (index.go)
	keys       map[string]*keyState
	steps      stepRows
	rowKinds   map[rowKind]*rowKind // the types and statuses of its rows, once each (steprow.go)
	recordings []Recording
	journal    *journal // nil: in memory only
	pending    []*Entry // entries numbered but not yet indexed (FinishStep)
	journalN   int64    // journal records written so far (the file's watermark)
	// holdsNext is where the step record after the one a journal record
	// at or below the watermark was last found at should be (holds).
	holdsNext int
	now       func() time.Time
	// seen: the key's version an author last read of another author's
	// writing. A write of its own, or a read of one, needs no note:
	// every later version is newer, so another author's write after it
	// conflicts whether the writer's own version is noted or not, and a
	// run of 100k keyed writes and reads held a map of them.
	seen       map[seenKey]int64
	conflictAt map[string]int   // a key's newest conflict entry (index in entries)
	perms      map[string]Perms // per-author key patterns (nil: anyone, any key)
	changed    chan struct{}    // closed at the next change (nil: nobody waits)
	redact     Redact           // masks secrets in what enters the board; nil: none
	torn       bool             // the journal loaded ended in a torn line
	// blobsKnown are the keys of the large strings the file and journal
	// hold (store_blob.go): a journal line refers to these without repeating them.
	blobsKnown map[string]bool
	loadBlobs  *blobTable        // while loading: the values of the file and journal
	texts      texts             // the large strings held, once each (held.go)
	readOnly   bool              // LoadForRead: writes refused
	planSrc    []byte            // LoadLive: run.PlanSource, still quoted (Run unquotes it)
	planAt     planAt            // LoadLive: where run.PlanSource is in the file (Run reads it)
	spare      spare             // room for the indexes' small lists (index.go)
	packBuf    []byte            // scratch for packing (pack.go)
	interned   map[string]string // packed texts shared (pack.go)
}

type keyState struct {
	latest  int   // index of the newest entry for the key
	version int64 // writes so far (tombstones count)
}

// New returns an empty in-memory board.
func New(run Run) *Board {
	return &Board{
		run:        run,
		keys:       map[string]*keyState{},
		seen:       map[seenKey]int64{},
		conflictAt: map[string]int{},
		now:        time.Now,
	}
}

// SetClock replaces the clock (tests, replay).
func (b *Board) SetClock(now func() time.Time) {
	b.mu.Lock()
	b.now = now
	b.mu.Unlock()
}

// Now reads the board's clock: the one its TTLs expire by (a view that
// says how long a key has left reads it too).
func (b *Board) Now() time.Time {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.now()
}

// Append adds an entry. Seq, ID and TS are assigned; a keyed entry gets the
// key's next version. It is not a compare-and-set: see Write for that.
func (b *Board) Append(e Entry) (Entry, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.writeLocked(e, -1, false)
}

// WriteOp is a key-value write or delete.
type WriteOp struct {
	Key     string
	Value   any
	TTL     time.Duration // 0: no expiry
	Section string        // default "kv"
	Author  string
	Label   string
	Role    string
	Meta    map[string]any
	// Topic is the channel the write is published on; "" takes the key's
	// prefix before its first ':' (task:x is on topic task), if it has one.
	Topic string
	// ExpectVersion makes the write conditional: it succeeds only when the
	// key's current version equals it (0: the key must not exist). -1: any.
	ExpectVersion int64
	Delete        bool
	// Handoff says the writer takes the key over knowingly (seed 001's
	// task hand-off: another agent picks up task:X), so overwriting another
	// author's value it has not read in this process is not a lost update.
	// The entry records whom it took the key from (meta.handoff) instead
	// of a conflict.
	Handoff bool
	// Lease makes the write a lease operation (lease.go): LeaseLock takes
	// or renews the key for Owner for TTL, LeaseUnlock releases it.
	Lease string
	// Owner holds the lease (default Author).
	Owner string
}

// Write performs a key-value write (or delete) as one appended entry. A
// write by an author outside its write patterns fails with ErrDenied. A
// write that overwrites another author's change this author had not seen,
// with a different value, also appends a conflict entry (see Conflicts),
// in the same journal line.
func (b *Board) Write(op WriteOp) (Entry, error) {
	if op.Key == "" {
		return Entry{}, errors.New("board: write needs a key")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// The key first: the errors below print it.
	if err := b.checkKeyLocked(op.Key); err != nil {
		return Entry{}, err
	}
	if err := op.checkTTL(); err != nil {
		return Entry{}, err
	}
	if err := b.allowedLocked(op.Author, "write", op.Key); err != nil {
		return Entry{}, err
	}
	if err := b.leaseLocked(&op, b.now().UTC()); err != nil {
		return Entry{}, err
	}
	return b.writeLocked(op.entry(), op.ExpectVersion, op.Handoff)
}

// checkTTL refuses a negative TTL (one that overflowed, too): taken as
// "no TTL" it would keep for good a value meant to expire.
func (op *WriteOp) checkTTL() error {
	if op.TTL < 0 {
		return fmt.Errorf("board: key %q: ttl %s is negative", op.Key, op.TTL)
	}
	return nil
}

func (op *WriteOp) entry() Entry {
	if op.Section == "" {
		op.Section = "kv"
	}
	e := Entry{Section: op.Section, Author: op.Author, Label: op.Label, Role: op.Role,
		Key: op.Key, Topic: op.Topic, Content: op.Value, Meta: op.Meta, Deleted: op.Delete}
	if e.Topic == "" {
		e.Topic = KeyTopic(op.Key)
	}
	if op.TTL > 0 {
		s := op.TTL.Seconds()
		e.TTL = &s
	}
	return e
}

// KeyTopic is the topic a key's writes take when they give none: the
// key's prefix before its first ':', or "".
func KeyTopic(key string) string {
	if i := strings.IndexByte(key, ':'); i > 0 {
		return key[:i]
	}
	return ""
}

// writeLocked appends e, with the conflict it causes if any, as one
// journal record.
func (b *Board) writeLocked(e Entry, expect int64, handoff bool) (Entry, error) {
	defer func() { b.pending = b.pending[:0] }()
	now := b.now().UTC()
	e, err := b.prepareLocked(e, expect, now)
	if err != nil {
		return Entry{}, err
	}
	c := b.conflictLocked(&e, expect, handoff, now)
	rec := record{Entry: &e}
	if c != nil {
		b.pending = append(b.pending[:0], &e)
		if *c, err = b.prepareLocked(*c, -1, now); err != nil {
			return Entry{}, err
		}
		rec = record{Entries: []*Entry{&e, c}}
	}
	if err := b.logLocked(rec); err != nil {
		return Entry{}, err
	}
	out := e // before indexLocked packs its meta
	b.indexLocked(&e)
	if c != nil {
		b.indexLocked(c)
	}
	b.notifyLocked()
	return out, nil
}

// prepareLocked checks a compare-and-set and numbers e, without changing
// the board: indexLocked does that once the entry is in the journal.
func (b *Board) prepareLocked(e Entry, expect int64, now time.Time) (Entry, error) {
	if e.Key != "" {
		if err := b.checkKeyLocked(e.Key); err != nil {
			return Entry{}, err
		}
	}
	if expect < -1 {
		return Entry{}, fmt.Errorf("board: key %q: expected version %d: want 0 or more (or none)", b.maskLocked(e.Key), expect)
	}
	b.redactEntry(&e)
	// A large text the board holds already (the answer an entry and a
	// recording both hold) is kept once (held.go).
	e.Content = b.texts.intern(e.Content, 0)
	if e.Key != "" {
		cur := b.liveVersionLocked(e.Key, now)
		if p := b.pendingKeyLocked(e.Key); p != nil {
			cur = p.Version
			if p.Deleted {
				cur = 0
			}
		}
		if expect >= 0 && cur != expect {
			return Entry{}, fmt.Errorf("board: key %q: expected version %d, found %d: %w", e.Key, expect, cur, ErrVersion)
		}
		if e.Deleted && cur == 0 {
			return Entry{}, fmt.Errorf("board: key %q does not exist: %w", e.Key, ErrAbsent)
		}
		e.Version = b.keyVersionLocked(e.Key) + 1
	}
	e.Seq = int64(b.entries.len()+len(b.pending)) + 1
	if e.ID == "" {
		e.ID = NewID(now)
	}
	if e.TS.IsZero() {
		e.TS = now
	}
	return e, nil
}

// keyVersionLocked counts the key's writes so far, pending ones included.
func (b *Board) keyVersionLocked(key string) int64 {
	if p := b.pendingKeyLocked(key); p != nil {
		return p.Version
	}
	if ks := b.keys[key]; ks != nil {
		return ks.version
	}
	return 0
}

// pendingKeyLocked is the newest pending entry for key, if any.
func (b *Board) pendingKeyLocked(key string) *Entry {
	for i := len(b.pending) - 1; i >= 0; i-- {
		if b.pending[i].Key == key {
			return b.pending[i]
		}
	}
	return nil
}

// indexLocked adds e (already numbered) to the in-memory views.
func (b *Board) indexLocked(e *Entry) {
	i := b.entries.len()
	if b.fields != nil {
		b.fields.add(e.Section, e.Author, e.Label, e.Role, e.Key, i, &b.spare)
	}
	if e.Section == ConflictSection {
		b.indexConflictLocked(e, i)
	}
	b.packMeta(e)
	b.addEntry(e)
	if e.Key != "" {
		ks := b.keys[e.Key]
		if ks == nil {
			ks = b.spare.keyState()
			b.keys[e.Key] = ks
		}
		ks.latest = i
		ks.version = e.Version
	}
}

// liveVersionLocked is the version a compare-and-set compares against: the
// key's version when its newest entry is live, else 0 (absent).
func (b *Board) liveVersionLocked(key string, now time.Time) int64 {
	ks := b.keys[key]
	if ks == nil {
		return 0
	}
	if b.entries.at(ks.latest).gone(now) {
		return 0
	}
	return ks.version
}

// Get returns the live value of key: its newest entry, unless that entry
// expired or deleted the key.
func (b *Board) Get(key string) (Entry, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	ks := b.keys[key]
	if ks == nil {
		return Entry{}, false
	}
	r := b.entries.at(ks.latest)
	if r.gone(b.now()) {
		return Entry{}, false
	}
	return r.loaded(ks.latest), true
}

// GetAt is Get with the clock given by the caller and read only when the
// key's newest entry has a TTL, outside the board's lock: a run records
// the clock readings that decide an expiry so that its replay decides the
// same, and records no others.
func (b *Board) GetAt(key string, now func() time.Time) (Entry, bool) {
	b.mu.RLock()
	ks := b.keys[key]
	var e Entry
	if ks != nil {
		e = b.entries.at(ks.latest).loaded(ks.latest)
	}
	b.mu.RUnlock()
	if ks == nil || e.Deleted || (e.TTL != nil && e.Expired(now())) {
		return Entry{}, false
	}
	return e, true
}

// KeyVersion returns the entry that made version v of key (a replay
// serving what a racing read saw), or false when there is none.
func (b *Board) KeyVersion(key string, v int64) (Entry, bool) {
	b.indexFields()
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, i := range b.fields.byKey[key] {
		if r := b.entries.at(i); r.version == v {
			return r.loaded(i), true
		}
	}
	return Entry{}, false
}

// KeysAt is Keys with the caller's clock, read once and only when a key
// with a TTL is among the candidates (see GetAt).
func (b *Board) KeysAt(prefix string, now func() time.Time) []KeyInfo {
	b.mu.RLock()
	ttl := false
	for k, ks := range b.keys {
		if r := b.entries.at(ks.latest); r.ttl() != nil && !r.kind.deleted && strings.HasPrefix(k, prefix) {
			ttl = true
			break
		}
	}
	b.mu.RUnlock()
	if !ttl {
		return b.keysAt(prefix, time.Time{})
	}
	return b.keysAt(prefix, now())
}

// Version is how many times key was written (tombstones and expired
// writes included): the next write gets Version+1.
func (b *Board) Version(key string) int64 {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if ks := b.keys[key]; ks != nil {
		return ks.version
	}
	return 0
}

// KeyInfo describes a live key.
type KeyInfo struct {
	Key     string    `json:"key"`
	Version int64     `json:"version"`
	Author  string    `json:"author"`
	TS      time.Time `json:"ts"`
	TTL     *float64  `json:"ttl_s"`
}

// Keys lists the live keys starting with prefix, sorted.
func (b *Board) Keys(prefix string) []KeyInfo {
	b.mu.RLock()
	now := b.now()
	b.mu.RUnlock()
	return b.keysAt(prefix, now)
}

func (b *Board) keysAt(prefix string, now time.Time) []KeyInfo {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []KeyInfo
	if prefix == "" {
		out = make([]KeyInfo, 0, len(b.keys)) // grown by append, it left copies of itself behind
	}
	for k, ks := range b.keys {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		r := b.entries.at(ks.latest)
		if r.gone(now) {
			continue
		}
		out = append(out, KeyInfo{Key: k, Version: r.version, Author: r.kind.author, TS: r.time(), TTL: r.ttl()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Filter selects entries; empty fields match everything.
type Filter struct {
	Section, Role, Author, Label, Key string
	// Topic is the channel an entry was published on (Entry.Topic).
	Topic    string
	AfterSeq int64 // only entries with a larger seq
	// Since and Until bound an entry's time: at or after Since, before
	// Until (a half-open interval, so consecutive windows do not overlap);
	// zero: unbounded.
	Since, Until time.Time
	Limit        int // the newest Limit matches; 0: all
}

// Query returns the matching entries, oldest first. It uses the index of the
// most selective field given, so it does not scan the whole board.
func (b *Board) Query(f Filter) []Entry {
	if f.Section != "" || f.Author != "" || f.Label != "" || f.Role != "" || f.Key != "" {
		b.indexFields()
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	var idx []int
	all := true
	pick := func(m map[string][]int, v string) {
		if v == "" {
			return
		}
		l := m[v]
		if all || len(l) < len(idx) {
			idx, all = l, false
		}
	}
	if x := b.fields; x != nil {
		pick(x.bySection, f.Section)
		pick(x.byAuthor, f.Author)
		pick(x.byLabel, f.Label)
		pick(x.byRole, f.Role)
		pick(x.byKey, f.Key)
	}
	match := func(r *entryRow) bool {
		k := r.kind
		if !((f.Section == "" || k.section == f.Section) && (f.Role == "" || k.role == f.Role) &&
			(f.Author == "" || k.author == f.Author) && (f.Label == "" || r.label == f.Label) &&
			(f.Key == "" || r.key == f.Key) && (f.Topic == "" || k.topic == f.Topic)) {
			return false
		}
		if f.Since.IsZero() && f.Until.IsZero() {
			return true
		}
		ts := r.time()
		return (f.Since.IsZero() || !ts.Before(f.Since)) && (f.Until.IsZero() || ts.Before(f.Until))
	}
	var out []Entry
	n := b.entries.len()
	if !all {
		n = len(idx)
	}
	// Walk newest first so Limit keeps the newest, then reverse.
	for j := n - 1; j >= 0; j-- {
		i := j
		if !all {
			i = idx[j]
		}
		r := b.entries.at(i)
		if int64(i)+1 <= f.AfterSeq { // its seq
			break
		}
		if match(r) {
			out = append(out, r.loaded(i))
			if f.Limit > 0 && len(out) == f.Limit {
				break
			}
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// EntryByID returns the entry with the given id (Entry.ID); ok is false
// when the board has none.
func (b *Board) EntryByID(id string) (Entry, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if id == "" {
		return Entry{}, false
	}
	// Ids are unique and rarely asked for: a scan, newest first, instead
	// of an index every board would pay for.
	u, isULID := ulidOf(id)
	for i := b.entries.len() - 1; i >= 0; i-- {
		if r := b.entries.at(i); r.hasID(id, u, isULID) {
			return r.loaded(i), true
		}
	}
	return Entry{}, false
}

// Len is the number of entries.
func (b *Board) Len() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.entries.len()
}

// Run returns the run description.
func (b *Board) Run() Run {
	b.mu.RLock()
	defer b.mu.RUnlock()
	r := b.run
	if b.planSrc != nil {
		r.PlanSource = planSourceOf(b.planSrc)
	} else if b.planAt.path != "" {
		r.PlanSource = b.planAt.read()
	}
	return r
}

// SharePlanSource has the board keep src as its run's plan source when
// it is the same text: a replay's plan, compiled from the recording's, and
// the recording each held the 10 MB of a 100k-step plan.
func (b *Board) SharePlanSource(src string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.planSrc == nil && b.planAt.path == "" && b.run.PlanSource == src {
		b.run.PlanSource = src
	}
}

// UpdateRun changes the run description (status, finish time) durably.
func (b *Board) UpdateRun(f func(*Run)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.run
	f(&r)
	b.redactRun(&r)
	rec := record{Run: &r}
	if r.PlanSource != "" && r.PlanSource == b.run.PlanSource {
		lean := r
		lean.PlanSource = ""
		rec = record{Run: &lean, SameSource: true}
	}
	if err := b.logLocked(rec); err != nil {
		return err
	}
	b.run = r
	b.notifyLocked()
	return nil
}

// AddStep records a finished step visit durably.
func (b *Board) AddStep(s StepRecord) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.redactStep(&s)
	// Held apart before the journal writes it: the line takes the texts
	// as they are, without hashing the JSON's literals again.
	if err := b.texts.holdStep(&s); err != nil {
		return err
	}
	if err := b.logLocked(record{Step: &s}); err != nil {
		return err
	}
	b.steps.add(b.rowOf(&s))
	b.notifyLocked()
	return nil
}

// FinishStep records a finished step visit together with its audit entry
// and the key-value writes it makes (compare-and-set checked here), and
// the conflicts those writes cause, as one journal line with one
// write(2): a process killed at any moment leaves all of them or none. A
// failed compare-and-set writes nothing and returns an error wrapping
// ErrVersion; a write outside its author's patterns, ErrDenied.
func (b *Board) FinishStep(s StepRecord, e Entry, kvs ...*WriteOp) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	defer func() { b.pending = b.pending[:0] }()
	b.redactStep(&s)
	// A step's entries are stamped with the time it finished, which its
	// record keeps: a replay that reuses the recorded times stamps them,
	// and decides expiries and compare-and-sets, as the run did.
	now := s.FinishedAt.UTC()
	if s.FinishedAt.IsZero() {
		now = b.now().UTC()
	}
	first, err := b.prepareLocked(e, -1, now)
	if err != nil {
		return err
	}
	b.pending = append(b.pending[:0], &first)
	for _, given := range kvs {
		kv := *given // a lease operation becomes a write here: the caller's stays as it was
		if err := b.checkKeyLocked(kv.Key); err != nil {
			return err // before the errors below, which print the key
		}
		if err := b.allowedLocked(kv.Author, "write", kv.Key); err != nil {
			return err
		}
		if err := kv.checkTTL(); err != nil {
			return err
		}
		if err := b.leaseLocked(&kv, now); err != nil {
			return err
		}
		next, err := b.prepareLocked(kv.entry(), kv.ExpectVersion, now)
		if err != nil {
			return err
		}
		c := b.conflictLocked(&next, kv.ExpectVersion, kv.Handoff, now)
		b.pending = append(b.pending, &next)
		if c != nil {
			if *c, err = b.prepareLocked(*c, -1, now); err != nil {
				return err
			}
			b.pending = append(b.pending, c)
		}
	}
	batch := append([]*Entry(nil), b.pending...)
	if err := b.texts.holdStep(&s); err != nil {
		return err
	}
	if err := b.logLocked(record{Entries: batch, Step: &s}); err != nil {
		return err
	}
	for _, e := range batch {
		b.indexLocked(e)
	}
	b.steps.add(b.rowOf(&s))
	b.notifyLocked()
	return nil
}

// Steps returns the step records in the order they finished.
func (b *Board) Steps() []StepRecord {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]StepRecord, b.steps.len())
	for i := range out {
		out[i] = b.steps.record(i).whole()
	}
	return out
}

// Step is step record i (from 0, oldest first; see NumSteps) whole, as
// Steps gives it: for a reader that keeps the records without their
// inputs (StepsBrief) and reads a step's when it shows that step.
func (b *Board) Step(i int) StepRecord {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.steps.record(i).whole()
}

// LastVisit is the highest visit of label among the step records, 0 if
// none: the last of its visits that ended. It reads every record, for a
// question asked seldom (a watcher of a step's streamed answer starting).
func (b *Board) LastVisit(label string) int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	last := 0
	for i := range b.steps.len() {
		if r := b.steps.record(i); r.Label == label {
			last = max(last, r.Visit)
		}
	}
	return last
}

// AddRecording keeps a model exchange durably.
func (b *Board) AddRecording(r Recording) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.redactRecording(&r)
	if err := b.texts.holdRec(&r); err != nil {
		return err
	}
	if err := b.logLocked(record{Rec: &r}); err != nil {
		return err
	}
	b.recordings = append(b.recordings, r)
	return nil
}

// Recordings returns the recordings in the order they were made.
// NumSteps is the number of step records.
func (b *Board) NumSteps() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.steps.len()
}

// StepsBrief yields the step records, oldest first, as Steps gives them
// but without their inputs (Inputs nil) and one at a time: for readers
// of a run's progress (a resume restoring its steps), to whom a copy of
// every record, inputs built, was tens of megabytes at 100k steps. It
// yields the records there were when it started.
func (b *Board) StepsBrief() iter.Seq[StepRecord] {
	return func(yield func(StepRecord) bool) {
		b.mu.RLock()
		n := b.steps.len()
		b.mu.RUnlock()
		for i := range n {
			if !yield(b.StepBrief(i)) {
				return
			}
		}
	}
}

// StepBrief is the i-th step record without its inputs (StepsBrief).
func (b *Board) StepBrief(i int) StepRecord {
	b.mu.RLock()
	s := b.steps.record(i)
	b.mu.RUnlock()
	s.Inputs, s.packedInputs = nil, ""
	return s.whole()
}

// LastStep is the step record added last, as the board keeps it (masked),
// without copying the others.
func (b *Board) LastStep() (StepRecord, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.steps.len() == 0 {
		return StepRecord{}, false
	}
	return b.steps.record(b.steps.len() - 1).whole(), true
}

// LastRecording is the recording added last, as the board keeps it.
func (b *Board) LastRecording() (Recording, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if len(b.recordings) == 0 {
		return Recording{}, false
	}
	return b.recordings[len(b.recordings)-1].whole(), true
}

func (b *Board) Recordings() []Recording {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := append([]Recording(nil), b.recordings...)
	for i := range out {
		out[i] = out[i].whole()
	}
	return out
}

// StepsKeyed returns the step records as the board keeps them: each
// string of BlobMin bytes or more in a result left as its key, as
// RecordingsKeyed does, and small inputs left as their JSON (Inputs nil);
// Whole gives one whole.
func (b *Board) StepsKeyed() []StepRecord {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]StepRecord, b.steps.len())
	for i := range out {
		out[i] = b.steps.record(i)
	}
	return out
}

// StepKeyed is step record i (from 0, oldest first; see NumSteps) as
// StepsKeyed gives it: for a reader that keeps where the records are
// rather than a copy of them all (a replay's script of a 100k-step run).
func (b *Board) StepKeyed(i int) StepRecord {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.steps.record(i)
}

// RecordingsKeyed returns the recordings as the board keeps them: each
// string of BlobMin bytes or more in a request or response left as its
// key ("sha256:<hex>", docs/spec.md §3). For readers that skip those
// strings (usage, costs, call numbers), which need not build a model's
// answer of tens of megabytes into JSON again; Whole gives one whole.
func (b *Board) RecordingsKeyed() []Recording {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return append([]Recording(nil), b.recordings...)
}

// Entries returns every entry, oldest first.
func (b *Board) Entries() []Entry {
	return b.Query(Filter{})
}

// All yields every entry, oldest first, as Entries gives them but one at
// a time: for a reader that looks at each once (a replay's check of the
// board), to whom a copy of every entry was tens of megabytes at 100k
// entries. It yields the entries there were when it started.
func (b *Board) All() iter.Seq[Entry] { return b.each(true) }

// AllBare is All with each entry's Meta left nil: for a reader that
// shows the rest (a report's board listing), to whom every entry's meta
// was a map made and dropped.
func (b *Board) AllBare() iter.Seq[Entry] { return b.each(false) }

func (b *Board) each(meta bool) iter.Seq[Entry] {
	return func(yield func(Entry) bool) {
		b.mu.RLock()
		n := b.entries.len()
		b.mu.RUnlock()
		for i := range n {
			b.mu.RLock()
			e := b.entries.entry(i)
			if meta || e.lazy != nil {
				e = e.loaded()
			}
			b.mu.RUnlock()
			if !meta {
				e.Meta, e.packedMeta, e.metaFloats = nil, "", false
			}
			if !yield(e) {
				return
			}
		}
	}
}

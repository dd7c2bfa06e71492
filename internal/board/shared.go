package board

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
)

// A board shared by several writers (docs/live-board.md): per-author key patterns,
// conflicts between authors, and a signal for those who watch it.

// ErrDenied is returned when an author reads or writes a key outside its
// patterns.
var ErrDenied = errors.New("not allowed")

// ConflictSection is the section conflict entries go to.
const ConflictSection = "conflicts"

// Perms are the key patterns (path.Match) an author may read and write;
// an empty list allows any key.
type Perms struct {
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
}

type seenKey struct{ author, key string }

// SetPerms sets every author's key patterns. Authors without an entry may
// read and write any key.
func (b *Board) SetPerms(perms map[string]Perms) {
	b.mu.Lock()
	b.perms = perms
	b.mu.Unlock()
}

// Allowed reports whether author may op ("read" or "write") key: nil, or
// an error wrapping ErrDenied that says which patterns would allow it.
func (b *Board) Allowed(author, op, key string) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.allowedLocked(author, op, key)
}

func (b *Board) allowedLocked(author, op, key string) error {
	p, ok := b.perms[author]
	if !ok {
		return nil
	}
	patterns := p.Read
	if op == "write" {
		patterns = p.Write
	}
	if len(patterns) == 0 {
		return nil
	}
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, key); ok {
			return nil
		}
	}
	return fmt.Errorf("agent %s may not %s key %q (board.%s allows %s): %w",
		author, op, key, op, strings.Join(patterns, ", "), ErrDenied)
}

// ReadAs is Get for a named reader: it checks the reader's patterns and
// remembers the version it saw, so its next write to the key is not taken
// for a conflict with a change it has read.
func (b *Board) ReadAs(author, key string) (Entry, bool, error) {
	return b.ReadAsAt(author, key, nil)
}

// ReadAsAt is ReadAs with the caller's clock, read outside the lock and
// only for a key with a TTL (see GetAt); nil: the board's clock.
func (b *Board) ReadAsAt(author, key string, now func() time.Time) (Entry, bool, error) {
	b.mu.Lock()
	if err := b.allowedLocked(author, "read", key); err != nil {
		b.mu.Unlock()
		return Entry{}, false, err
	}
	ks := b.keys[key]
	if ks == nil {
		b.mu.Unlock()
		return Entry{}, false, nil
	}
	r := b.entries.at(ks.latest)
	if author != "" && r.kind.author != author {
		// A read of one's own write needs no note either (see seen).
		b.seen[seenKey{author, key}] = ks.version
	}
	e := r.loaded(ks.latest)
	if now == nil {
		now = b.now
	}
	b.mu.Unlock()
	if e.Deleted || (e.TTL != nil && e.Expired(now())) {
		return Entry{}, false, nil
	}
	return e, true, nil
}

// conflictLocked is the conflict entry e's write causes, or nil. A write
// conflicts when the key's live value was last written by another author,
// after the version this writer last read or wrote (or named in its
// compare-and-set, expect), and holds a different value (compared as
// canonical JSON). The write still happens: the entry records both sides
// so the plan (or a person) can resolve it. A hand-off (see
// WriteOp.Handoff) is no conflict: e records in meta.handoff whom it took
// the key from.
func (b *Board) conflictLocked(e *Entry, expect int64, handoff bool, now time.Time) *Entry {
	if e.Key == "" || e.Deleted || e.Author == "" {
		return nil
	}
	cur := b.pendingKeyLocked(e.Key)
	if cur == nil {
		ks := b.keys[e.Key]
		if ks == nil {
			return nil
		}
		// What follows asked of the row first: the entry is built only
		// for a write over another author's live value.
		r := b.entries.at(ks.latest)
		if r.gone(now) || r.kind.author == "" || r.kind.author == e.Author {
			return nil
		}
		latest := r.entry(ks.latest)
		cur = &latest
	}
	if cur == nil || cur.Deleted || cur.Expired(now) || cur.Author == "" || cur.Author == e.Author {
		return nil
	}
	if handoff {
		meta := make(map[string]any, len(e.Meta)+1)
		for k, v := range e.Meta {
			meta[k] = v
		}
		meta["handoff"] = map[string]any{"from": cur.Author, "version": cur.Version}
		e.Meta = meta
		return nil
	}
	if cur.Version <= max(b.seen[seenKey{e.Author, e.Key}], expect) {
		return nil
	}
	full := cur.loaded()
	if sameJSON(full.Content, e.Content) {
		return nil
	}
	side := func(x *Entry) map[string]any {
		return map[string]any{"author": x.Author, "value": x.Content, "version": x.Version, "label": x.Label}
	}
	return &Entry{Section: ConflictSection, Role: "conflict", Author: e.Author, Label: e.Label, Topic: e.Topic,
		Content: map[string]any{"key": e.Key, "written": side(e), "overwritten": side(&full)},
		Meta:    map[string]any{"key": e.Key}}
}

// indexConflictLocked remembers conflict entry e (at index i) as its
// key's newest, for OpenConflict.
func (b *Board) indexConflictLocked(e *Entry, i int) {
	meta := e.Meta
	if e.lazy != nil { // conflicts are few: decoding them here is cheap
		meta = e.loaded().Meta
	}
	if k, ok := meta["key"].(string); ok && k != "" {
		b.conflictAt[k] = i
	}
}

// OpenConflict is the conflict behind key's live value, if there is one:
// the newest conflict recorded for the key, while its live value is still
// the write that caused it. A later write (the resolution, made after
// reading the key) or the key's deletion or expiry closes it.
func (b *Board) OpenConflict(key string) (Entry, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	i, ok := b.conflictAt[key]
	ks := b.keys[key]
	if !ok || ks == nil {
		return Entry{}, false
	}
	if b.entries.at(ks.latest).gone(b.now()) {
		return Entry{}, false
	}
	c := b.entries.at(i).loaded(i)
	content, _ := c.Content.(map[string]any)
	written, _ := content["written"].(map[string]any)
	if v, ok := asInt64(written["version"]); !ok || v != ks.version {
		return Entry{}, false
	}
	return c, true
}

// asInt64 reads a version kept in a conflict's content: an int64 when the
// board wrote it, a float64 when it was loaded from JSON.
func asInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		return int64(n), n == float64(int64(n))
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// Conflicts returns the conflict entries recorded for key ("" for every
// key), oldest first.
func (b *Board) Conflicts(key string) []Entry {
	all := b.Query(Filter{Section: ConflictSection})
	if key == "" {
		return all
	}
	out := all[:0]
	for _, e := range all {
		if k, _ := e.Meta["key"].(string); k == key {
			out = append(out, e)
		}
	}
	return out
}

// sameJSON compares two values as canonical JSON: object keys sorted,
// numbers as JSON numbers, so 1 and 1.0 and {"a":1,"b":2} and
// {"b":2,"a":1} are the same value.
func sameJSON(a, b any) bool {
	ca, erra := canonical(a)
	cb, errb := canonical(b)
	return erra == nil && errb == nil && bytes.Equal(ca, cb)
}

func canonical(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var x any
	if err := json.Unmarshal(data, &x); err != nil {
		return nil, err
	}
	return json.Marshal(x)
}

// Changed returns a channel closed at the board's next change (an entry,
// a step record, the run's status). Watchers wait on it, then query what
// is new with Filter.AfterSeq.
func (b *Board) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed == nil {
		b.changed = make(chan struct{})
	}
	return b.changed
}

func (b *Board) notifyLocked() {
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
}

// Outside writes: a run's board also takes writes from other processes
// (through its owner's socket, or the CLI under the run's lock). They
// carry meta.via, so a replay can tell them from the plan's own writes and
// make them again at the same point (see OutsideOp).
const (
	ViaSocket   = "socket"
	ViaCLI      = "cli"
	ViaTemporal = "temporal" // an update to a run on Temporal
)

// IsOutside reports whether e was written from outside the run.
func IsOutside(e Entry) bool {
	via, _ := e.Meta["via"].(string)
	return via == ViaSocket || via == ViaCLI || via == ViaTemporal
}

// OutsideOp is the write that made e, to make it again on another board
// (a replay): same key, value, author, topic, TTL and meta; unconditional.
func OutsideOp(e Entry) WriteOp {
	op := WriteOp{Key: e.Key, Value: e.Content, Section: e.Section, Author: e.Author, Label: e.Label,
		Role: e.Role, Meta: e.Meta, Topic: e.Topic, ExpectVersion: -1, Delete: e.Deleted,
		Handoff: e.Meta["handoff"] != nil}
	if e.TTL != nil {
		op.TTL = time.Duration(*e.TTL * float64(time.Second))
	}
	return op
}

package board

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestTopics(t *testing.T) {
	b := New(Run{})
	tests := []struct {
		op   WriteOp
		want string
	}{
		{WriteOp{Key: "task:q4", Value: 1}, "task"},
		{WriteOp{Key: "signal:analyst:ready", Value: 1}, "signal"},
		{WriteOp{Key: "plain", Value: 1}, ""},
		{WriteOp{Key: ":odd", Value: 1}, ""},
		{WriteOp{Key: "task:q5", Value: 1, Topic: "security"}, "security"},
	}
	for _, tt := range tests {
		tt.op.ExpectVersion = -1
		e, err := b.Write(tt.op)
		if err != nil || e.Topic != tt.want {
			t.Errorf("write %q topic %q: got topic %q, err %v; want %q", tt.op.Key, tt.op.Topic, e.Topic, err, tt.want)
		}
	}
}

func TestConflicts(t *testing.T) {
	w := func(author, key string, v any) WriteOp {
		return WriteOp{Key: key, Value: v, Author: author, ExpectVersion: -1}
	}
	tests := []struct {
		name  string
		ops   func(b *Board) // setup before the last write
		last  WriteOp
		wantN int
	}{
		{"unseen change, different value", func(b *Board) { b.Write(w("a", "k", "x")) }, w("b", "k", "y"), 1},
		{"unseen change, same value", func(b *Board) { b.Write(w("a", "k", "x")) }, w("b", "k", "x"), 0},
		{"same value as canonical JSON", func(b *Board) { b.Write(w("a", "k", map[string]any{"a": 1, "b": 2.0})) },
			w("b", "k", map[string]any{"b": 2, "a": 1.0}), 0},
		{"writer read it first", func(b *Board) { b.Write(w("a", "k", "x")); b.ReadAs("b", "k") }, w("b", "k", "y"), 0},
		{"changed again after the read", func(b *Board) {
			b.Write(w("a", "k", "x"))
			b.ReadAs("b", "k")
			b.Write(w("a", "k", "z"))
		}, w("b", "k", "y"), 1},
		{"compare-and-set on the version it overwrites", func(b *Board) { b.Write(w("a", "k", "x")) },
			WriteOp{Key: "k", Value: "y", Author: "b", ExpectVersion: 1}, 0},
		{"own value", func(b *Board) { b.Write(w("a", "k", "x")) }, w("a", "k", "y"), 0},
		{"writer wrote it last before", func(b *Board) { b.Write(w("b", "k", "x")); b.Write(w("b", "k", "x2")) }, w("b", "k", "y"), 0},
		{"changed since the writer's own write", func(b *Board) {
			b.Write(w("b", "k", "x"))
			b.ReadAs("a", "k")
			b.Write(w("a", "k", "z"))
		}, w("b", "k", "y"), 1},
		{"read its own value, then another wrote", func(b *Board) {
			b.Write(w("b", "k", "x"))
			b.ReadAs("b", "k")
			b.ReadAs("a", "k")
			b.Write(w("a", "k", "z"))
		}, w("b", "k", "y"), 1},
		{"read its own value after another's read", func(b *Board) {
			b.Write(w("a", "k", "x"))
			b.ReadAs("b", "k")
			b.Write(w("b", "k", "x2"))
			b.ReadAs("b", "k")
		}, w("b", "k", "y"), 0},
		{"read since the writer's own write", func(b *Board) {
			b.Write(w("b", "k", "x"))
			b.ReadAs("a", "k")
			b.Write(w("a", "k", "z"))
			b.ReadAs("b", "k")
		}, w("b", "k", "y"), 0},
		{"read, then its own write, then another's", func(b *Board) {
			b.Write(w("a", "k", "x"))
			b.ReadAs("b", "k")
			b.Write(w("b", "k", "x2"))
			b.ReadAs("a", "k")
			b.Write(w("a", "k", "z"))
		}, w("b", "k", "y"), 1},
		{"deleted key", func(b *Board) {
			b.Write(w("a", "k", "x"))
			b.Write(WriteOp{Key: "k", Delete: true, Author: "a", ExpectVersion: -1})
		}, w("b", "k", "y"), 0},
		{"expired value", func(b *Board) {
			b.Write(WriteOp{Key: "k", Value: "x", Author: "a", TTL: time.Second, ExpectVersion: -1})
		}, w("b", "k", "y"), 0},
		{"anonymous writer", func(b *Board) { b.Write(w("a", "k", "x")) }, w("", "k", "y"), 0},
		{"other key", func(b *Board) { b.Write(w("a", "k", "x")) }, w("b", "k2", "y"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			b := New(Run{})
			b.SetClock(func() time.Time { return now })
			tt.ops(b)
			now = now.Add(2 * time.Second)
			before := b.Get
			prev, _ := before("k")
			e, err := b.Write(tt.last)
			if err != nil {
				t.Fatal(err)
			}
			cs := b.Conflicts(tt.last.Key)
			if len(cs) != tt.wantN {
				t.Fatalf("%d conflicts, want %d: %+v", len(cs), tt.wantN, cs)
			}
			if tt.wantN == 0 {
				return
			}
			c := cs[0].Content.(map[string]any)
			written, over := c["written"].(map[string]any), c["overwritten"].(map[string]any)
			if c["key"] != "k" || written["author"] != tt.last.Author || written["value"] != tt.last.Value ||
				written["version"] != e.Version || over["author"] != prev.Author || over["value"] != prev.Content ||
				over["version"] != prev.Version || cs[0].Seq != e.Seq+1 {
				t.Fatalf("conflict %+v after write %+v over %+v", cs[0], e, prev)
			}
			if got, _ := b.Get("k"); got.Content != tt.last.Value {
				t.Fatalf("the write did not happen: %v", got.Content)
			}
		})
	}
}

// A write and its conflict are one journal record; a step's writes and
// their conflicts are in its record; both load back.
func TestConflictsPersist(t *testing.T) {
	path := t.TempDir() + "/blackboard.json"
	b, err := Create(path, Run{ID: "r"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.Write(WriteOp{Key: "k", Value: "x", Author: "a", ExpectVersion: -1})
	b.Write(WriteOp{Key: "k", Value: "y", Author: "b", ExpectVersion: -1})
	err = b.FinishStep(StepRecord{Label: "s", Visit: 1, Status: "succeeded"}, Entry{Section: "steps", Author: "runner"},
		&WriteOp{Key: "k", Value: "z", Author: "c", ExpectVersion: -1})
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cs := loaded.Conflicts("k")
	if len(cs) != 2 || loaded.Len() != 6 {
		t.Fatalf("loaded %d entries, conflicts %+v", loaded.Len(), cs)
	}
	if cs[1].Content.(map[string]any)["written"].(map[string]any)["author"] != "c" {
		t.Fatalf("second conflict %+v", cs[1])
	}
	// Reloaded, each author has seen its own last write: no new conflict.
	loaded.Write(WriteOp{Key: "k", Value: "z", Author: "a", ExpectVersion: -1})
	if n := len(loaded.Conflicts("")); n != 2 {
		t.Fatalf("%d conflicts after writing the same value", n)
	}
}

func TestPerms(t *testing.T) {
	b := New(Run{})
	b.SetPerms(map[string]Perms{"coder": {Read: []string{"task:*", "spec"}, Write: []string{"result:*"}}})
	tests := []struct {
		author, op, key string
		ok              bool
	}{
		{"coder", "write", "result:x", true},
		{"coder", "write", "task:x", false},
		{"coder", "read", "task:x", true},
		{"coder", "read", "secret", false},
		{"other", "write", "anything", true},
		{"", "write", "anything", true},
	}
	for _, tt := range tests {
		var err error
		if tt.op == "write" {
			_, err = b.Write(WriteOp{Key: tt.key, Value: 1, Author: tt.author, ExpectVersion: -1})
		} else {
			_, _, err = b.ReadAs(tt.author, tt.key)
		}
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrDenied)) {
			t.Errorf("%s %s %s: err %v, want ok=%v", tt.author, tt.op, tt.key, err, tt.ok)
		}
	}
	err := b.FinishStep(StepRecord{Label: "s", Visit: 1}, Entry{Section: "steps"}, &WriteOp{Key: "task:y", Value: 1, Author: "coder", ExpectVersion: -1})
	if !errors.Is(err, ErrDenied) || len(b.Steps()) != 0 {
		t.Fatalf("a step's write outside the author's patterns: %v", err)
	}
}

func TestChanged(t *testing.T) {
	b := New(Run{})
	ch := b.Changed()
	select {
	case <-ch:
		t.Fatal("signalled before any change")
	default:
	}
	b.Write(WriteOp{Key: "k", Value: 1, ExpectVersion: -1})
	select {
	case <-ch:
	case <-time.After(time.Second):
		t.Fatal("no signal after a write")
	}
	ch = b.Changed()
	b.UpdateRun(func(r *Run) { r.Status = StatusSucceeded })
	<-ch
}

func TestTopicEncoded(t *testing.T) {
	e := &Entry{ID: "x", Seq: 1, Key: "task:a", Topic: "task", Content: "v"}
	data, err := appendEntry(nil, e, nil)
	if err != nil {
		t.Fatal(err)
	}
	var back Entry
	if err := json.Unmarshal(data, &back); err != nil || back.Topic != "task" {
		t.Fatalf("%s -> %+v %v", data, back, err)
	}
}

func TestOutsideOp(t *testing.T) {
	a, b := New(Run{}), New(Run{})
	ttl := 30 * time.Second
	e, _ := a.Write(WriteOp{Key: "task:x", Value: map[string]any{"n": 1.0}, Author: "w1", Role: "user", TTL: ttl,
		Meta: map[string]any{"via": ViaSocket}, ExpectVersion: -1, Topic: "jobs"})
	if !IsOutside(e) || IsOutside(Entry{Meta: map[string]any{"via": "x"}}) || IsOutside(Entry{}) {
		t.Fatal("IsOutside")
	}
	again, err := b.Write(OutsideOp(e))
	if err != nil {
		t.Fatal(err)
	}
	if again.Key != e.Key || again.Author != e.Author || again.Topic != "jobs" || *again.TTL != 30 ||
		again.Version != 1 || again.Meta["via"] != ViaSocket || !sameJSON(again.Content, e.Content) {
		t.Fatalf("%+v, want like %+v", again, e)
	}
}

// Seed 001's task hand-off: another agent takes task:X knowingly. It is
// no lost update, so no conflict is recorded; the entry says whom the key
// was taken from, and a replay of it (OutsideOp) records no conflict
// either.
func TestHandoff(t *testing.T) {
	tests := []struct {
		name      string
		handoff   bool
		conflicts int
		from      any
	}{
		{"unseen overwrite is a conflict", false, 1, nil},
		{"hand-off is not", true, 0, "orchestrator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(Run{})
			b.Write(WriteOp{Key: "task:q4", Value: map[string]any{"status": "pending"}, Author: "orchestrator", ExpectVersion: -1})
			e, err := b.Write(WriteOp{Key: "task:q4", Value: map[string]any{"status": "in_progress"}, Author: "analyst",
				ExpectVersion: -1, Handoff: tt.handoff, Meta: map[string]any{"via": ViaCLI}})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(b.Conflicts("task:q4")); n != tt.conflicts {
				t.Fatalf("%d conflicts, want %d", n, tt.conflicts)
			}
			h, _ := e.Meta["handoff"].(map[string]any)
			if tt.from == nil {
				if h != nil {
					t.Fatalf("meta.handoff %v on a write that is no hand-off", h)
				}
				return
			}
			if h["from"] != tt.from || h["version"] != int64(1) || e.Meta["via"] != ViaCLI {
				t.Fatalf("meta %v: want handoff from %v at version 1, and via kept", e.Meta, tt.from)
			}
			// A replay makes the same write on a fresh board: no conflict.
			r := New(Run{})
			r.Write(WriteOp{Key: "task:q4", Value: map[string]any{"status": "pending"}, Author: "orchestrator", ExpectVersion: -1})
			if _, err := r.Write(OutsideOp(e)); err != nil {
				t.Fatal(err)
			}
			if n := len(r.Conflicts("")); n != 0 {
				t.Fatalf("replayed hand-off recorded %d conflicts", n)
			}
		})
	}
}

// A conflict stays open while the live value is the write that caused
// it, in memory and loaded back from the file; the resolution (a write
// after reading), a delete or an expiry closes it.
func TestOpenConflict(t *testing.T) {
	w := func(author string, v any) WriteOp {
		return WriteOp{Key: "k", Value: v, Author: author, ExpectVersion: -1}
	}
	tests := []struct {
		name  string
		after func(b *Board)
		open  bool
	}{
		{"open", func(b *Board) {}, true},
		{"resolved after reading", func(b *Board) { b.ReadAs("judge", "k"); b.Write(w("judge", "agreed")) }, false},
		{"rewritten by its writer", func(b *Board) { b.Write(w("b", "y2")) }, false},
		{"deleted", func(b *Board) { b.Write(WriteOp{Key: "k", Author: "b", Delete: true, ExpectVersion: -1}) }, false},
	}
	for _, tt := range tests {
		for _, reload := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reload=%v", tt.name, reload), func(t *testing.T) {
				path := t.TempDir() + "/blackboard.json"
				b, err := Create(path, Run{ID: "r"}, Options{})
				if err != nil {
					t.Fatal(err)
				}
				b.Write(w("a", "x"))
				b.Write(w("b", "y"))
				if _, ok := b.OpenConflict("other"); ok {
					t.Fatal("a key never written has an open conflict")
				}
				tt.after(b)
				if reload {
					if err := b.Close(); err != nil {
						t.Fatal(err)
					}
					if b, err = Load(path); err != nil {
						t.Fatal(err)
					}
				}
				c, ok := b.OpenConflict("k")
				if ok != tt.open {
					t.Fatalf("open %v, want %v (%+v)", ok, tt.open, c)
				}
				if ok {
					over := c.Content.(map[string]any)["overwritten"].(map[string]any)
					if over["author"] != "a" || over["value"] != "x" {
						t.Fatalf("open conflict %+v: want a's x as the overwritten side", c)
					}
				}
			})
		}
	}
}

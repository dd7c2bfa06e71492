package board

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// A board loaded for reading answers every read as the fully loaded one
// does (values, large ones from the blob table, tombstones, TTLs, the
// journal's records, history), and refuses writes.
func TestLoadForReadReadsAsLoad(t *testing.T) {
	path := t.TempDir() + "/blackboard.json"
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.SetClock(func() time.Time { return clock })
	big := bigText(100 << 10)
	ops := []WriteOp{
		{Key: "a", Value: "one", Author: "x"},
		{Key: "a", Value: map[string]any{"n": 2.0, "big": big}, Author: "y", Meta: map[string]any{"why": "second"}},
		{Key: "gone", Value: 1},
		{Key: "gone", Delete: true},
		{Key: "ttl", Value: "expires", TTL: time.Second},
		{Key: "big", Value: big},
	}
	for i, op := range ops {
		op.ExpectVersion = -1
		if _, err := b.Write(op); err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	// After the save: in the journal only.
	b.Write(WriteOp{Key: "late", Value: []any{"x", big}, ExpectVersion: -1})
	b.Close()

	full, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	lazy, err := LoadForRead(path)
	if err != nil {
		t.Fatal(err)
	}
	later := func() time.Time { return clock.Add(time.Hour) }
	for _, bb := range []*Board{full, lazy} {
		bb.SetClock(func() time.Time { return clock })
	}
	js := func(v any) string { data, _ := json.Marshal(v); return string(data) }
	for _, key := range []string{"a", "gone", "ttl", "big", "late", "missing"} {
		fe, fok := full.Get(key)
		le, lok := lazy.Get(key)
		if fok != lok || js(fe) != js(le) {
			t.Errorf("Get(%q): %v %.80s; loaded for reading: %v %.80s", key, fok, js(fe), lok, js(le))
		}
		fe, fok, ferr := full.ReadAsAt("cli", key, later)
		le, lok, lerr := lazy.ReadAsAt("cli", key, later)
		if fok != lok || js(fe) != js(le) || (ferr == nil) != (lerr == nil) {
			t.Errorf("ReadAsAt(%q) an hour later differs", key)
		}
	}
	if js(full.Entries()) != js(lazy.Entries()) || js(full.Keys("")) != js(lazy.Keys("")) {
		t.Error("Entries or Keys differ")
	}
	if e, ok := lazy.KeyVersion("a", 1); !ok || e.Content != "one" {
		t.Errorf("KeyVersion(a, 1): %v %v", e.Content, ok)
	}
	if e, _ := lazy.Get("big"); e.Content != big {
		t.Error("the large value did not read back")
	}
	if _, err := lazy.Write(WriteOp{Key: "a", Value: 3, ExpectVersion: -1}); err == nil || !strings.Contains(err.Error(), "reading only") {
		t.Errorf("a write on a board loaded for reading: %v", err)
	}
	// Encoding it (a live board served from it) writes the values.
	data, err := lazy.Encode()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(data)
	if err != nil || js(again.Entries()) != js(full.Entries()) {
		t.Fatalf("encoded and parsed again: %v", err)
	}
}

// A damaged entry or reference is an error when the board is loaded for
// reading too, naming the entry.
func TestLoadForReadDamage(t *testing.T) {
	path := t.TempDir() + "/blackboard.json"
	b, _ := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
	big := bigText(100 << 10)
	b.Write(WriteOp{Key: "big", Value: big, ExpectVersion: -1})
	b.Save()
	b.Close()
	data, _ := os.ReadFile(path)
	lit, _ := json.Marshal(big)
	bad := strings.Replace(string(data), `"`+hashText(big)+`": `+string(lit), `"`+hashText("z")+`": "z"`, 1)
	os.WriteFile(path, []byte(bad), 0o600)
	if _, err := LoadForRead(path); err == nil || !strings.Contains(err.Error(), "entry seq 1") {
		t.Fatalf("LoadForRead of a file missing a blob: %v", err)
	}
}

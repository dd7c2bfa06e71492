package board

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestEntriesComeBackAsGiven: an entry comes back as it was written,
// live (Entries, EntryByID, Get) and through the saved file read every
// way, whatever its row keeps apart: an id that is no NewID one, a time
// in another zone or with a monotonic reading, a TTL, a meta that cannot
// be packed or holds floats, a tombstone, a topic, kinds other entries
// share.
func TestEntriesComeBackAsGiven(t *testing.T) {
	at := time.Date(2026, 11, 30, 7, 23, 31, 343816125, time.UTC)
	in := []Entry{
		{Section: "notes", Role: "agent", Author: "a", Label: "s1", Content: "hi", Meta: map[string]any{"visit": 1}},
		{Section: "notes", Role: "agent", Author: "a", Label: "s2", Content: "there", Meta: map[string]any{"visit": 2}},
		{ID: "custom-id", Section: "notes", Content: 1.5},
		{ID: "01m8p88ed8rzg2wbxcshkf8h3p", Section: "notes", Content: "a lower-case ulid"},
		{ID: "00000000000000000000000000", Section: "notes", Content: "the zero ulid"},
		{ID: "7ZZZZZZZZZZZZZZZZZZZZZZZZZ", Section: "notes", Content: "the largest ulid"},
		{ID: "8ZZZZZZZZZZZZZZZZZZZZZZZZZ", Section: "notes", Content: "past the largest"},
		{Section: "notes", TS: at.In(time.FixedZone("CET", 3600)), Content: "another zone"},
		{Section: "notes", TS: time.Now(), Content: "a monotonic reading"},
		{Section: "notes", TS: at, Content: "UTC"},
		{Section: "kv", Key: "ttl", TTL: new(60.0), Content: "expires"},
		{Section: "kv", Key: "gone", Content: "written"},
		{Section: "kv", Key: "gone", Deleted: true},
		{Section: "kv", Key: "task:1", Topic: "task", Author: "b", Content: map[string]any{"x": "y"}},
		{Section: "notes", Meta: map[string]any{"nested": map[string]any{"x": "y"}}},
		{Section: "notes", Meta: map[string]any{"score": 0.5}},
	}
	path := filepath.Join(t.TempDir(), "blackboard.json")
	b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.SetClock(func() time.Time { return at })
	var want []Entry
	for _, e := range in {
		got, err := b.Append(e)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, got)
	}
	got := b.Entries()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("live entries:\n%+v\nwant\n%+v", got, want)
	}
	for _, w := range want {
		if e, ok := b.EntryByID(w.ID); !ok || !reflect.DeepEqual(e, w) {
			t.Errorf("EntryByID(%q) = %+v, %v; want %+v", w.ID, e, ok, w)
		}
	}
	if e, ok := b.Get("ttl"); !ok || e.Content != "expires" || *e.TTL != 60 {
		t.Errorf(`Get("ttl") = %+v, %v`, e, ok)
	}
	if _, ok := b.Get("gone"); ok {
		t.Error(`Get("gone"): a deleted key found`)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	for name, load := range map[string]func(string) (*Board, error){"Load": Load, "LoadForRead": LoadForRead, "LoadToResume": LoadToResume} {
		back, err := load(path)
		if err != nil {
			t.Fatal(err)
		}
		gotJSON, _ := json.Marshal(back.Entries())
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("%s: entries\n%s\nwant\n%s", name, gotJSON, wantJSON)
		}
		if e, ok := back.EntryByID("custom-id"); !ok || e.Content != 1.5 {
			t.Errorf("%s: EntryByID(custom-id) = %+v, %v", name, e, ok)
		}
	}
}

// TestULIDText: every NewID id is kept in 16 bytes and said again as it
// was; no other text is taken for one.
func TestULIDText(t *testing.T) {
	for range 1000 {
		id := NewID(time.Now())
		u, ok := ulidOf(id)
		if !ok || u.String() != id {
			t.Fatalf("ulidOf(%q) = %v, %v: %q", id, u, ok, u.String())
		}
	}
	for _, id := range []string{"", "x", "01m8p88ed8rzg2wbxcshkf8h3p", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ", "0000000000000000000000000U", "01M8P88ED8RZG2WBXCSHKF8H3PX"} {
		if u, ok := ulidOf(id); ok {
			t.Errorf("ulidOf(%q) = %v, ok", id, u)
		}
	}
}

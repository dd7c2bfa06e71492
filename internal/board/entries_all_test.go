package board

import (
	"encoding/json"
	"testing"
)

// All yields what Entries returns, in order (AllBare without their
// meta), from a live board and from
// its file read whole, lazily to resume, or for reading; it stops when
// told to, and gives the entries there were when it started.
func TestAllYieldsEntries(t *testing.T) {
	path := t.TempDir() + "/blackboard.json"
	b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	big := bigText(100 << 10)
	for i, op := range []WriteOp{
		{Key: "a", Value: "one", Author: "x"},
		{Key: "a", Value: map[string]any{"n": 2.0, "big": big}, Meta: map[string]any{"why": "second"}},
		{Key: "gone", Value: 1},
		{Key: "gone", Delete: true},
		{Key: "big", Value: big},
	} {
		op.ExpectVersion = -1
		if _, err := b.Write(op); err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	b.Write(WriteOp{Key: "late", Value: []any{"x", 1.0}, ExpectVersion: -1}) // in the journal only
	js := func(v any) string { data, _ := json.Marshal(v); return string(data) }
	check := func(name string, bb *Board, n int) {
		want := bb.Entries()
		var got []Entry
		for e := range bb.All() {
			got = append(got, e)
		}
		if len(got) != len(want) || len(got) != n {
			t.Fatalf("%s: All gave %d entries, Entries %d; want %d", name, len(got), len(want), n)
		}
		for i := range want {
			if js(got[i]) != js(want[i]) {
				t.Errorf("%s: entry %d:\n All     %s\n Entries %s", name, i, js(got[i]), js(want[i]))
			}
		}
		i := 0
		for e := range bb.AllBare() {
			w := want[i]
			w.Meta = nil
			if e.Meta != nil || js(e) != js(w) {
				t.Errorf("%s: entry %d:\n AllBare %s\n Entries %s without its meta", name, i, js(e), js(w))
			}
			i++
		}
		if i != n {
			t.Errorf("%s: AllBare gave %d entries, want %d", name, i, n)
		}
		seen := 0
		for range bb.All() {
			if seen++; seen == 2 {
				break
			}
		}
		if seen != 2 {
			t.Errorf("%s: All went on after being told to stop", name)
		}
	}
	check("live", b, 6)
	// Written to while it yields: the entries there were when it started.
	n := 0
	for range b.All() {
		if n == 0 {
			b.Write(WriteOp{Key: "during", Value: "x", ExpectVersion: -1})
		}
		n++
	}
	if n != 6 || b.Len() != 7 {
		t.Errorf("All gave %d entries of a board written to as it went (now %d); want 6", n, b.Len())
	}
	b.Close()
	for name, load := range map[string]func(string) (*Board, error){"Load": Load, "LoadToResume": LoadToResume, "LoadForRead": LoadForRead} {
		bb, err := load(path)
		if err != nil {
			t.Fatal(err)
		}
		check(name, bb, 7)
		bb.Close()
	}
}

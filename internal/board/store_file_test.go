package board

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

func fill(t *testing.T, b *Board, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := b.Append(Entry{Section: "s", Content: i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.AddStep(StepRecord{Label: "x", Visit: 1, Status: "succeeded", Result: json.RawMessage(`{"output":1}`)}); err != nil {
		t.Fatal(err)
	}
}

// The file exists from the start; what is not yet folded into it is in the
// journal, and Load sees both.
func TestJournalHoldsWhatTheFileDoesNot(t *testing.T) {
	path := t.TempDir() + "/blackboard.json"
	b, err := Create(path, Run{ID: "r1", Status: StatusRunning}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var f File
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &f); err != nil || f.Format != Format || f.Run.ID != "r1" {
		t.Fatalf("file at start: %v %+v", err, f)
	}
	fill(t, b, 5)
	b.Write(WriteOp{Key: "k", Value: "v", ExpectVersion: -1})
	// Not saved: a process killed now leaves file + journal.
	loaded, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Len() != 6 || len(loaded.Steps()) != 1 {
		t.Fatalf("loaded %d entries, %d steps; want 6 and 1", loaded.Len(), len(loaded.Steps()))
	}
	if e, ok := loaded.Get("k"); !ok || e.Content != "v" {
		t.Fatalf("key k after load: %+v %v", e, ok)
	}
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(JournalPath(path)); !os.IsNotExist(err) {
		t.Fatalf("journal still there after Save: %v", err)
	}
	again, _ := Load(path)
	if again.Len() != 6 {
		t.Fatalf("after save: %d entries", again.Len())
	}
}

// A process killed mid-write leaves a torn last line: it is dropped, and
// everything before it is kept.
func TestTornJournalTail(t *testing.T) {
	path := t.TempDir() + "/blackboard.json"
	b, _ := Create(path, Run{ID: "r"}, Options{})
	fill(t, b, 3)
	b.Close()
	f, _ := os.OpenFile(JournalPath(path), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"n":99,"entry":{"seq":4,"sect`)
	f.Close()
	loaded, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Len() != 3 {
		t.Fatalf("%d entries, want 3", loaded.Len())
	}
	// Resuming folds the journal in and goes on appending after it.
	b2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b2.Append(Entry{Section: "s", Content: "after"})
	b2.Close()
	loaded, err = Load(path)
	if err != nil || loaded.Len() != 4 {
		t.Fatalf("after resume: %v, %d entries", err, loaded.Len())
	}
}

// A crash after the file was replaced but before the journal was removed
// must not duplicate anything.
func TestCrashBetweenSaveAndTruncate(t *testing.T) {
	path := t.TempDir() + "/blackboard.json"
	b, _ := Create(path, Run{ID: "r"}, Options{})
	fill(t, b, 4)
	journal, _ := os.ReadFile(JournalPath(path))
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(JournalPath(path), journal, 0o644) // as if the removal never happened
	loaded, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Len() != 4 || len(loaded.Steps()) != 1 {
		t.Fatalf("%d entries, %d steps; want 4 and 1", loaded.Len(), len(loaded.Steps()))
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"notjson":   "{",
		"badformat": `{"format":"other/v9"}`,
	}
	for name, content := range cases {
		p := dir + "/" + name
		os.WriteFile(p, []byte(content), 0o644)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err = %v, want one naming the file", name, err)
		}
	}
	p := dir + "/corrupt.json"
	b, _ := Create(p, Run{}, Options{})
	fill(t, b, 2)
	b.Close()
	data, _ := os.ReadFile(JournalPath(p))
	os.WriteFile(JournalPath(p), append([]byte("garbage\n"), data...), 0o644)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), ":1: corrupt journal record") {
		t.Errorf("corrupt middle of journal: err = %v", err)
	}
}

func TestEntryTimesRoundTrip(t *testing.T) {
	path := t.TempDir() + "/blackboard.json"
	b, _ := Create(path, Run{ID: "r"}, Options{})
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	b.SetClock(func() time.Time { return ts })
	b.Write(WriteOp{Key: "k", Value: map[string]any{"a": []any{1.5, "x"}}, TTL: 90 * time.Second, ExpectVersion: -1})
	b.Save()
	loaded, _ := Load(path)
	loaded.SetClock(func() time.Time { return ts.Add(time.Minute) })
	e, ok := loaded.Get("k")
	if !ok || !e.TS.Equal(ts) || *e.TTL != 90 {
		t.Fatalf("round trip: %+v %v", e, ok)
	}
}

// A blackboard.json reformatted by hand (indented) loads the same as the
// one runner wrote.
func TestLoadAnyLayout(t *testing.T) {
	path := t.TempDir() + "/blackboard.json"
	b, _ := Create(path, Run{ID: "r"}, Options{})
	fill(t, b, 50)
	b.Write(WriteOp{Key: "k", Value: []any{"a", 1.0}, ExpectVersion: -1})
	b.Save()
	data, _ := os.ReadFile(path)
	var v any
	json.Unmarshal(data, &v)
	pretty, _ := json.MarshalIndent(v, "", "    ")
	other := t.TempDir() + "/pretty.json"
	os.WriteFile(other, pretty, 0o644)
	a, err1 := Load(path)
	c, err2 := Load(other)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	ea, ec := a.Entries(), c.Entries()
	if len(ea) != 51 || len(ec) != 51 {
		t.Fatalf("%d and %d entries", len(ea), len(ec))
	}
	for i := range ea {
		ja, _ := json.Marshal(ea[i])
		jc, _ := json.Marshal(ec[i])
		if string(ja) != string(jc) {
			t.Fatalf("entry %d: %s vs %s", i, ja, jc)
		}
	}
	if e, ok := c.Get("k"); !ok || len(e.Content.([]any)) != 2 {
		t.Fatalf("key k: %+v", e)
	}
}

// A change of the run record that keeps its plan source journals the
// record without it (a 100k-step plan is 10 MB, written twice per
// resume); loading gives it back, and a changed source is journaled whole.
func TestRunRecordJournaledWithoutAnUnchangedPlanSource(t *testing.T) {
	src := strings.Repeat("steps: [a long plan]\n", 2000)
	cases := []struct {
		name   string
		change func(*Run)
		want   string // plan source after load
		whole  bool   // the source is in the journal
	}{
		{"status only", func(r *Run) { r.Status = StatusFailed }, src, false},
		{"status twice", func(r *Run) { r.Status, r.Error = StatusFailed, "x" }, src, false},
		{"a new source", func(r *Run) { r.PlanSource = "version: 1\n# edited\n" }, "version: 1\n# edited\n", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := t.TempDir() + "/blackboard.json"
			b, err := Create(path, Run{ID: "r1", Status: StatusRunning, PlanSource: src}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if err := b.UpdateRun(tc.change); err != nil {
				t.Fatal(err)
			}
			if err := b.UpdateRun(func(r *Run) { r.Status = StatusFailed }); err != nil {
				t.Fatal(err)
			}
			j, _ := os.ReadFile(JournalPath(path))
			if got := strings.Contains(string(j), "a long plan") || strings.Contains(string(j), "# edited"); got != tc.whole || len(j) == 0 {
				t.Errorf("journal holds the source: %v, want %v (%d bytes)", got, tc.whole, len(j))
			}
			loaded, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if r := loaded.Run(); r.PlanSource != tc.want || r.Status != StatusFailed {
				t.Errorf("loaded run: status %s, source %.30q…; want %.30q…", r.Status, r.PlanSource, tc.want)
			}
			if err := b.Save(); err != nil {
				t.Fatal(err)
			}
			if saved, _ := Load(path); saved.Run().PlanSource != tc.want {
				t.Errorf("saved source %.30q…", saved.Run().PlanSource)
			}
		})
	}
}

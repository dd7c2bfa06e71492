package board

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A board read by LoadLean leaves its step records and entries in the
// file and gives each, when asked, as Load gives it: the rare fields, a
// result's large strings held in the file's blobs, times Load keeps
// whole, a key's newest entry, and what its journal added after the
// file was saved. A record or an entry whose line was written into
// after the read says so.
func TestLoadLeanReadsAsLoad(t *testing.T) {
	path := t.TempDir() + "/run.json"
	b, err := Create(path, Run{ID: "r", Status: StatusRunning, PlanSource: "steps: []"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	write := func(i int) {
		op := WriteOp{Key: fmt.Sprint("k", i%500), Value: fmt.Sprintf("value %06d %s", i, strings.Repeat("v", 100)), Author: "a", ExpectVersion: -1,
			Label: fmt.Sprint("s", i)}
		switch i % 5 {
		case 1:
			op.Meta = map[string]any{"n": i, "tags": []any{"a", "b"}}
		case 2:
			op.TTL = time.Hour
		case 3:
			op.Delete, op.Value, op.Key = true, nil, fmt.Sprint("k", (i-1)%500) // written just before
		case 4:
			op.Section, op.Key, op.Value = "notes", fmt.Sprint("n", i), map[string]any{"i": i}
		}
		if _, err := b.Write(op); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3000 {
		write(i)
	}
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	step := func(i int) StepRecord {
		s := StepRecord{Label: fmt.Sprint("s", i), Visit: 1 + i%3, Type: "command", Status: "succeeded", Attempts: 1,
			StartedAt: t0.Add(time.Duration(i) * time.Millisecond), FinishedAt: t0.Add(time.Duration(i+1) * time.Millisecond),
			Result: json.RawMessage(fmt.Sprintf(`{"exit_code":0,"stdout":"line %06d %s"}`, i, strings.Repeat("x", 200))),
			Inputs: map[string]string{"run": fmt.Sprint("echo ", i)}}
		switch i % 7 {
		case 1:
			s.Status, s.Error = "failed", "exit status 1"
		case 2:
			s.Parent = "group"
		case 3:
			s.Goto, s.Type, s.Inputs = "s0", "branch", nil
		case 4:
			s.Delays = []int64{100, 200}
		case 5:
			s.StartedAt = time.Date(2300, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600)) // kept whole
		}
		if i == 4000 {
			s.Result = json.RawMessage(fmt.Sprintf(`{"stdout":%q}`, strings.Repeat("big answer ", BlobMin/8)))
		}
		return s
	}
	const saved, more = 5000, 3
	for i := range saved + more {
		if i == saved {
			if err := b.Save(); err != nil { // the rest only in the journal
				t.Fatal(err)
			}
		}
		if err := b.AddStep(step(i)); err != nil {
			t.Fatal(err)
		}
		if i >= saved {
			write(3000 + i)
		}
	}
	b.Close()
	if fi, _ := os.Stat(path); fi.Size() < settleMin {
		t.Fatalf("the file is %d bytes, not large", fi.Size())
	}

	want, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	lean, err := LoadLean(path)
	if err != nil {
		t.Fatal(err)
	}
	if inFile := lean.steps.file.len(); runtime.GOOS != "windows" && inFile != saved {
		t.Fatalf("%d records left in the file, want %d", inFile, saved)
	}
	if inFile := lean.entries.file.len(); runtime.GOOS != "windows" && inFile != 3000 {
		t.Fatalf("%d entries left in the file, want 3000", inFile)
	}
	if got, w := lean.Len(), want.Len(); got != w || w != 3000+more {
		t.Fatalf("Len = %d, Load's %d, want %d", got, w, 3000+more)
	}
	we := want.Entries()
	if got := lean.Entries(); !reflect.DeepEqual(got, we) {
		for i := range got {
			if !reflect.DeepEqual(got[i], we[i]) {
				t.Fatalf("entry %d:\n got %+v\nwant %+v", i, got[i], we[i])
			}
		}
		t.Fatal("Entries differ from Load's")
	}
	i := 0
	for e := range lean.All() {
		if !reflect.DeepEqual(e, we[i]) {
			t.Fatalf("All, entry %d:\n got %+v\nwant %+v", i, e, we[i])
		}
		i++
	}
	for _, k := range []string{"k0", "k1", "k2", "k3", "k497", "k499", "k5004"} { // k497: deleted last
		g, ok := lean.Get(k)
		w, wok := want.Get(k)
		if ok != wok || !reflect.DeepEqual(g, w) {
			t.Errorf("Get(%s) = %+v %v, Load's %+v %v", k, g, ok, w, wok)
		}
	}
	if got, w := lean.NumSteps(), want.NumSteps(); got != w || w != saved+more {
		t.Fatalf("NumSteps = %d, Load's %d, want %d", got, w, saved+more)
	}
	ws := want.Steps()
	if got := lean.Steps(); !reflect.DeepEqual(got, ws) {
		for i := range got {
			if !reflect.DeepEqual(got[i], ws[i]) {
				t.Fatalf("record %d:\n got %+v\nwant %+v", i, got[i], ws[i])
			}
		}
		t.Fatal("Steps differ from Load's")
	}
	for _, i := range []int{0, 1, 3, 4000, saved - 1, saved, saved + more - 1} {
		if got, w := lean.StepKeyed(i).Whole(), want.StepKeyed(i).Whole(); !reflect.DeepEqual(got, w) {
			t.Errorf("StepKeyed(%d):\n got %+v\nwant %+v", i, got, w)
		}
	}
	if got := lean.StepKeyed(4000).Whole(); !bytes.Contains(got.Result, []byte("big answer big answer")) {
		t.Errorf("the large result is not given back whole: %.80s", got.Result)
	}
	brief := 0
	for s := range lean.StepsBrief() {
		if s.Label != ws[brief].Label || s.Visit != ws[brief].Visit || s.Inputs != nil {
			t.Fatalf("StepsBrief %d: %s#%d inputs %v, want %s#%d without inputs", brief, s.Label, s.Visit, s.Inputs, ws[brief].Label, ws[brief].Visit)
		}
		brief++
	}
	if brief != saved+more {
		t.Errorf("StepsBrief gave %d records", brief)
	}
	if got, w := lean.LastVisit("s4998"), want.LastVisit("s4998"); got != w || w != 1+4998%3 {
		t.Errorf("LastVisit = %d, Load's %d", got, w)
	}
	if err := lean.AddStep(step(9)); err == nil {
		t.Error("a board read by LoadLean took a write")
	}
	if runtime.GOOS == "windows" {
		return // the records were held: nothing in the file to read back
	}

	// Written into after the read: the record or entry says so, never another's.
	scribble := func(what, over string) {
		data, _ := os.ReadFile(path)
		at := bytes.Index(data, []byte(what))
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte(over), int64(at)); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	scribble("line 001234", "LINE")
	scribble(`"author":"a","label":"s2000"`, `"author":"a","label":"S2000"`)
	if e := lean.Entries()[2000]; e.Label == "S2000" || !strings.Contains(fmt.Sprint(e.Content), "changed on disk") || !strings.Contains(fmt.Sprint(e.Content), "entry seq 2001") {
		t.Errorf("an entry written into after the read: %+v", e)
	}
	if e := lean.Entries()[1999]; !reflect.DeepEqual(e, we[1999]) {
		t.Errorf("the entry before it: %+v", e)
	}
	got := lean.StepKeyed(1234)
	if !strings.Contains(got.Error, "changed on disk") || !strings.Contains(got.Error, "step record 1235") || got.Status != "failed" {
		t.Errorf("a record written into after the read: %+v", got)
	}
	if got := lean.StepKeyed(1233).Whole(); !reflect.DeepEqual(got, ws[1233]) {
		t.Errorf("the record before it: %+v", got)
	}
}

// A crash between saving a run's file and removing its journal leaves
// the journal's records in the file too: each is found there, in order,
// whether the file's records are held or read back from it, and none is
// taken twice.
func TestJournalRecordsTheFileHolds(t *testing.T) {
	path := t.TempDir() + "/run.json"
	b, err := Create(path, Run{ID: "r", Status: StatusRunning, PlanSource: "steps: []"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	const n = 4000
	for i := range n {
		s := StepRecord{Label: fmt.Sprint("s", i%700), Visit: 1 + i/700, Type: "command", Status: "succeeded",
			StartedAt: t0.Add(time.Duration(i) * time.Millisecond), FinishedAt: t0.Add(time.Duration(i+1) * time.Millisecond),
			Result: json.RawMessage(fmt.Sprintf(`{"stdout":"line %06d %s"}`, i, strings.Repeat("x", 200)))}
		e := Entry{Role: "step", Author: "runner", Label: s.Label, Content: fmt.Sprint("out ", i)}
		if err := b.FinishStep(s, e); err != nil {
			t.Fatal(err)
		}
	}
	journal, err := os.ReadFile(JournalPath(path))
	if err != nil || len(journal) == 0 {
		t.Fatalf("no journal before the save: %v", err)
	}
	if err := b.Save(); err != nil { // the file takes every record; the journal goes
		t.Fatal(err)
	}
	b.Close()
	if err := os.WriteFile(JournalPath(path), journal, 0o644); err != nil { // as a crash before it went left it
		t.Fatal(err)
	}
	want, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	lean, err := LoadLean(path)
	if err != nil {
		t.Fatal(err)
	}
	if want.NumSteps() != n || lean.NumSteps() != n || want.Len() != n || lean.Len() != n {
		t.Fatalf("steps %d and %d, entries %d and %d; want %d each", want.NumSteps(), lean.NumSteps(), want.Len(), lean.Len(), n)
	}
	if runtime.GOOS != "windows" && lean.steps.file.len() != n {
		t.Errorf("%d records left in the file, want %d", lean.steps.file.len(), n)
	}
	if !reflect.DeepEqual(lean.Steps(), want.Steps()) {
		t.Error("the lean board's records differ from Load's")
	}
}

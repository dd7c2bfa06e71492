package board

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The board keeps small metas and inputs as their JSON and step records
// as rows (pack.go, steprow.go): what it hands out, and what it saves,
// must be what it was given, with the same Go types.
func TestPackedGivesBackWhatWasGiven(t *testing.T) {
	big := strings.Repeat("x", BlobMin)
	metas := []map[string]any{
		{"visit": 7, "type": "board", "status": "succeeded"},
		{"visit": -3, "ok": true, "none": nil, "text": "é \"quoted\" \n\u2028"},
		{},
		{"cost": 0.25}, // a float
		{"x": 1.0, "y": 1e21, "z": 5e-324, "w": -2.5, "s": "t", "b": false}, // floats, as a saved run's metas are read
		{"n": 1, "f": 0.5},                 // an int and a float: kept as given
		{"usage": map[string]any{"in": 1}}, // nested: kept as given
		{"big": big},                       // a large text: kept as given
		{"n": int64(5)},                    // not an int: kept as given
		{"bad": "a\xffb"},                  // not UTF-8: kept as given
		nil,
	}
	inputs := []map[string]string{
		{"key": "k1", "value": "hi \"me\" ✓"},
		{"prompt": big},
		{"bad": "a\xffb"},
		{},
		nil,
	}
	for _, reload := range []bool{false, true} {
		t.Run(fmt.Sprintf("reloaded %v", reload), func(t *testing.T) {
			path := t.TempDir() + "/blackboard.json"
			b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var want []StepRecord
			t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
			for i, m := range metas {
				s := StepRecord{Label: fmt.Sprintf("s%d", i), Visit: i + 1, Type: "board", Status: "succeeded",
					StartedAt: t0, FinishedAt: t0.Add(time.Second), DurationMS: 1000, Attempts: 1,
					Result: json.RawMessage(`{"output":"x"}`), Inputs: inputs[i%len(inputs)]}
				if i == 2 {
					s.Parent, s.Goto, s.Error, s.Host, s.Delays = "g", "s0", "boom", "h1", []int64{10, 20}
				}
				if err := b.FinishStep(s, Entry{Section: "steps", Role: "step", Author: "runner", Label: s.Label, Meta: m},
					&WriteOp{Key: fmt.Sprintf("k%d", i), Value: "v", Author: "runner", Meta: m, ExpectVersion: -1}); err != nil {
					t.Fatal(err)
				}
				if len(s.Inputs) == 0 {
					s.Inputs = nil // the file does not keep an empty map
				}
				want = append(want, s)
			}
			if reload {
				if err := b.Save(); err != nil {
					t.Fatal(err)
				}
				b.Close()
				if b, err = Load(path); err != nil {
					t.Fatal(err)
				}
			}
			if reload { // a file gives JSON's text back: invalid UTF-8 mended
				for i := range want {
					want[i].Inputs = decodedInputs(t, want[i].Inputs)
				}
			}
			got := b.Steps()
			if len(got) != len(want) {
				t.Fatalf("%d steps, want %d", len(got), len(want))
			}
			for i := range want {
				g := got[i]
				if !g.StartedAt.Equal(want[i].StartedAt) || !g.FinishedAt.Equal(want[i].FinishedAt) {
					t.Errorf("step %d: times %v %v, want %v %v", i, g.StartedAt, g.FinishedAt, want[i].StartedAt, want[i].FinishedAt)
				}
				g.StartedAt, g.FinishedAt = want[i].StartedAt, want[i].FinishedAt
				if !reflect.DeepEqual(g, want[i]) {
					t.Errorf("step %d:\n got %#v\nwant %#v", i, g, want[i])
				}
			}
			i := 0
			for s := range b.StepsBrief() {
				w := want[i]
				w.Inputs = nil // StepsBrief builds no inputs
				s.StartedAt, s.FinishedAt = w.StartedAt, w.FinishedAt
				if !reflect.DeepEqual(s, w) {
					t.Errorf("StepsBrief %d:\n got %#v\nwant %#v", i, s, w)
				}
				i++
			}
			if i != len(want) || b.NumSteps() != len(want) {
				t.Errorf("StepsBrief gave %d records, NumSteps %d; want %d", i, b.NumSteps(), len(want))
			}
			if last, _ := b.LastStep(); !reflect.DeepEqual(last.Inputs, want[len(want)-1].Inputs) {
				t.Errorf("LastStep inputs %v, want %v", last.Inputs, want[len(want)-1].Inputs)
			}
			for i, s := range b.StepsKeyed() {
				if !reflect.DeepEqual(s.Whole().Inputs, want[i].Inputs) {
					t.Errorf("StepsKeyed %d, whole: inputs %v, want %v", i, s.Whole().Inputs, want[i].Inputs)
				}
				if !reflect.DeepEqual(b.StepKeyed(i).Whole().Inputs, want[i].Inputs) {
					t.Errorf("StepKeyed(%d), whole: inputs %v, want %v", i, b.StepKeyed(i).Whole().Inputs, want[i].Inputs)
				}
			}
			for i, m := range metas {
				if reload {
					m = decoded(t, m) // a file gives JSON's types back
				}
				e, ok := b.Get(fmt.Sprintf("k%d", i))
				if !ok || !reflect.DeepEqual(e.Meta, m) {
					t.Errorf("Get k%d: meta %#v, want %#v", i, e.Meta, m)
				}
				steps := b.Query(Filter{Section: "steps", Label: fmt.Sprintf("s%d", i)})
				if len(steps) != 1 || !reflect.DeepEqual(steps[0].Meta, m) {
					t.Errorf("Query s%d: %+v, want meta %#v", i, steps, m)
				}
				if byID, _ := b.EntryByID(e.ID); !reflect.DeepEqual(byID.Meta, m) {
					t.Errorf("EntryByID k%d: meta %#v, want %#v", i, byID.Meta, m)
				}
			}
		})
	}
}

// decoded is v as a JSON round trip gives it back.
func decoded(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// decodedInputs is in as a JSON round trip gives it back.
func decodedInputs(t *testing.T, in map[string]string) map[string]string {
	t.Helper()
	if in == nil {
		return nil
	}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]string
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// A packed meta or input is saved as the bytes encoding it whole gives:
// a run's file does not change with how the board kept its records.
func TestPackedSavesTheSameBytes(t *testing.T) {
	save := func(pack bool) []byte {
		path := t.TempDir() + "/blackboard.json"
		b, err := Create(path, Run{ID: "r"}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		b.SetClock(func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) })
		for i := range 3 {
			s := StepRecord{Label: "s", Visit: i + 1, Status: "succeeded", Inputs: map[string]string{"z": "1", "a": "\u00e9\t"}}
			e := Entry{ID: fmt.Sprintf("id%d", i), Section: "steps", Role: "step", Author: "runner", Label: "s",
				Meta: map[string]any{"visit": i + 1, "status": "succeeded", "x": nil, "ok": false}}
			if err := b.FinishStep(s, e); err != nil {
				t.Fatal(err)
			}
		}
		if !pack {
			for i := range b.entries.len() {
				r := b.entries.at(i)
				e := r.entry(i).unpacked()
				*r = entryRow{}
				b.fillRow(r, &e)
			}
			for i := range b.steps.len() {
				r := b.steps.record(i).whole()
				row := b.steps.row(i)
				*row = b.rowOf(&r)
				row.inputs = ""
				row.rare = &stepRare{stepRarer: &stepRarer{inputs: r.inputs()}}
			}
		}
		if err := b.Save(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	packed, whole := save(true), save(false)
	if string(packed) != string(whole) {
		t.Fatalf("the file differs:\npacked:\n%s\nwhole:\n%s", packed, whole)
	}
	if !strings.Contains(string(packed), `"meta":{"ok":false,"status":"succeeded","visit":2,"x":null}`) ||
		!strings.Contains(string(packed), `"inputs":{"a":"é\t","z":"1"}`) {
		t.Fatalf("the metas and inputs are not in the file as JSON encodes them:\n%s", packed)
	}
}

// TestBoardKeepsLittlePerStep fails when what the board keeps for a
// finished step (its record, its audit entry, a key's write) grows back
// toward what it was before records were kept packed: 2.1 KB a step
// here, 1.1 KB packed, 1,036 bytes with a record's times in 8 bytes
// each, 958 with the index of sections, authors, labels, roles and keys built
// only when a query needs it, 909 with a row's type and status shared
// with the rows alike, 608 with entries kept as rows (entryrow.go). With
// the collector's headroom, what is kept per step sets a long run's peak.
func TestBoardKeepsLittlePerStep(t *testing.T) {
	const n = 20000
	b, err := Create(t.TempDir()+"/blackboard.json", Run{ID: "r", Status: StatusRunning}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// As a run's board, which masks its secrets wherever they show.
	b.SetRedact(func(s string) string { return strings.ReplaceAll(s, "SECRET-123", "***") })
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	step := func(i int) {
		s := StepRecord{Label: "write", Visit: i, Type: "board", Status: "succeeded", StartedAt: t0, FinishedAt: t0,
			Attempts: 1, Result: json.RawMessage(fmt.Sprintf(`{"output":"hi %d","key":"k%d","version":1,"found":true}`, i, i%1000)),
			Inputs: map[string]string{"key": fmt.Sprintf("k%d", i%1000), "value": fmt.Sprintf("hi %d", i)}}
		e := Entry{Section: "steps", Role: "step", Author: "runner", Label: "write", Content: fmt.Sprintf("hi %d", i),
			Meta: map[string]any{"visit": i, "type": "board", "status": "succeeded"}}
		kv := &WriteOp{Key: fmt.Sprintf("k%d", i%1000), Value: fmt.Sprintf("hi %d", i), Author: "runner", Label: "write",
			Role: "step", Meta: map[string]any{"visit": i}, ExpectVersion: -1}
		if err := b.FinishStep(s, e, kv); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 1000; i++ { // the keys exist: what follows adds versions
		step(i)
	}
	before := heapNow()
	for i := 1001; i <= 1000+n; i++ {
		step(i)
	}
	per := (heapNow() - before) / n
	runtime.KeepAlive(b)
	t.Logf("%d bytes kept per step", per)
	if per > 760 {
		t.Fatalf("the board keeps %d bytes per finished step, want at most 760", per)
	}
}

func heapNow() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestLoadedBoardKeepsLittlePerStep is TestBoardKeepsLittlePerStep for a
// saved run read whole (a replay's recording, a report, board get): its
// metas come back from the file with float64 numbers, kept as their JSON
// too: 731 bytes a step here, 1,400 before entries were kept as rows,
// 2,140 when metas were maps.
func TestLoadedBoardKeepsLittlePerStep(t *testing.T) {
	const n = 20000
	path := t.TempDir() + "/blackboard.json"
	b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 1; i <= n; i++ {
		s := StepRecord{Label: fmt.Sprintf("s%d", i), Visit: 1, Type: "board", Status: "succeeded", StartedAt: t0, FinishedAt: t0,
			Attempts: 1, Result: json.RawMessage(fmt.Sprintf(`{"output":"hi %d","key":"k%d","version":1,"found":true}`, i, i)),
			Inputs: map[string]string{"key": fmt.Sprintf("k%d", i), "value": fmt.Sprintf("hi %d", i)}}
		e := Entry{Section: "steps", Role: "step", Author: "runner", Label: s.Label, Content: fmt.Sprintf("hi %d", i),
			Meta: map[string]any{"visit": 1, "type": "board", "status": "succeeded", "cost_usd": 0.001}}
		kv := &WriteOp{Key: fmt.Sprintf("k%d", i), Value: fmt.Sprintf("hi %d", i), Author: "runner", Label: s.Label,
			Role: "step", Meta: map[string]any{"visit": i}, ExpectVersion: -1}
		if err := b.FinishStep(s, e, kv); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = nil
	before := heapNow()
	lb, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	per := (heapNow() - before) / n
	if lb.NumSteps() != n {
		t.Fatalf("loaded %d steps, want %d", lb.NumSteps(), n)
	}
	t.Logf("%d bytes kept per step", per)
	if e, ok := lb.Get("k7"); !ok || e.Meta["visit"] != 7.0 {
		t.Errorf("k7's meta %v, want visit 7 as a float64, as read from the file", e.Meta)
	}
	runtime.KeepAlive(lb)
	if per > 950 {
		t.Fatalf("a loaded board keeps %d bytes per step, want at most 950", per)
	}
}

package board

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A file of more records than one batch of the decoder (decodeBatch) reads
// back as it was written, by every loader, and a damaged line in a later
// batch is named as in the first.
func TestLoadOfSeveralBatches(t *testing.T) {
	path := t.TempDir() + "/blackboard.json"
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := Create(path, Run{ID: "r", Status: StatusRunning, PlanSource: "steps: []"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.SetClock(func() time.Time { clock = clock.Add(time.Millisecond); return clock })
	big := bigText(70 << 10) // a blob, shared by every entry that holds it
	stepBig := bigText(80 << 10)
	n := 2*decodeBatch + 3
	for i := range n {
		op := WriteOp{Key: fmt.Sprintf("k%d", i%50), Value: map[string]any{"i": float64(i), "s": fmt.Sprint("v", i)}, Author: fmt.Sprint("a", i%3), ExpectVersion: -1}
		switch i % 1000 {
		case 7:
			op.Value = big
		case 8:
			op.Meta = map[string]any{"why": "ü", "n": 2.5}
		}
		if _, err := b.Write(op); err != nil {
			t.Fatal(err)
		}
		rec := StepRecord{Label: fmt.Sprint("s", i), Visit: 1, Type: "board", Status: "succeeded", StartedAt: clock, FinishedAt: clock,
			Inputs: map[string]string{"key": op.Key}, Result: json.RawMessage(fmt.Sprintf(`{"output":%d}`, i))}
		if i%1000 == 9 {
			rec.Inputs["text"] = stepBig
		}
		if err := b.AddStep(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	wantSteps, wantEntries := b.Steps(), b.Entries()
	b.Close()
	saved, _ := os.ReadFile(path)

	for name, load := range map[string]func(string) (*Board, error){"Load": Load, "LoadForRead": LoadForRead, "LoadToResume": LoadToResume} {
		got, err := load(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s := got.Steps(); !reflect.DeepEqual(s, wantSteps) {
			t.Errorf("%s: %d steps, not those saved (first: %+v)", name, len(s), s[0])
		}
		for _, i := range []int{0, 5009, n - 1} { // 5009: a step whose input is a blob
			if s := got.Step(i); !reflect.DeepEqual(s, wantSteps[i]) {
				t.Errorf("%s: Step(%d) is %+v, saved %+v", name, i, s, wantSteps[i])
			}
		}
		sameEntries(t, name, got.Entries(), wantEntries)
		if e, ok := got.Get("k7"); !ok || e.Version != int64(n/50+1) {
			t.Errorf("%s: k7 is %+v, %v", name, e, ok)
		}
	}
	// Nothing a board read keeps shares the file's bytes, which are let
	// go of once read: scribbled over, the board is the same.
	for _, lazy := range []bool{false, true} {
		data := append([]byte(nil), saved...)
		var src *lineSource
		if lazy {
			src = newLineSource("blackboard.json", nil)
		}
		got, err := parseFile(data, src)
		if err != nil {
			t.Fatal(err)
		}
		for i := range data {
			data[i] = '#'
		}
		if s := got.Steps(); !reflect.DeepEqual(s, wantSteps) {
			t.Errorf("lazy %v: the steps read changed with the file's bytes", lazy)
		}
		sameEntries(t, fmt.Sprintf("lazy %v, the file's bytes changed", lazy), got.Entries(), wantEntries)
		if savedAs(t, got, t.TempDir()+"/blackboard.json") != string(saved) {
			t.Errorf("lazy %v: saved again after the file's bytes changed, the file differs", lazy)
		}
	}

	// Read to resume and saved again, the entries read are written as
	// they were read.
	r, err := LoadToResume(path)
	if err != nil {
		t.Fatal(err)
	}
	if again := savedAs(t, r, path); again != string(saved) {
		t.Errorf("the file read to resume and saved again differs (%d bytes, %d read)", len(again), len(saved))
	}

	lines := strings.Split(string(saved), "\n")
	nth := func(prefix string, k int) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				if k--; k == 0 {
					return i
				}
			}
		}
		t.Fatalf("no %q", prefix)
		return 0
	}
	for _, tc := range []struct {
		at   int
		want string
	}{
		{nth(`  {"label":`, decodeBatch+2), fmt.Sprintf("step record %d: invalid character ']'", decodeBatch+2)},
		{nth(`  {"id":`, 2*decodeBatch+1), fmt.Sprintf("entry %d: invalid character ']'", 2*decodeBatch+1)},
	} {
		damaged := append([]string(nil), lines...)
		damaged[tc.at] = strings.Replace(damaged[tc.at], `":`, `":]`, 1)
		p := t.TempDir() + "/blackboard.json"
		os.WriteFile(p, []byte(strings.Join(damaged, "\n")), 0o600)
		where := fmt.Sprintf("%s: not a blackboard file: line %d", p, tc.at+1)
		for _, load := range []func(string) (*Board, error){Load, LoadForRead, LoadToResume} {
			if _, err := load(p); err == nil || !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant it to name %q and say %q", err, where, tc.want)
			}
		}
	}
}

// sameEntries compares entries as JSON: a live board's numbers are Go's,
// a read one's JSON's.
func sameEntries(t *testing.T, what string, got, want []Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d entries, %d saved", what, len(got), len(want))
		return
	}
	for i := range got {
		g, _ := json.Marshal(got[i])
		w, _ := json.Marshal(want[i])
		if string(g) != string(w) {
			t.Errorf("%s: entry %d is\n%s\nsaved\n%s", what, i, g, w)
			return
		}
	}
}

// savedAs is the file b writes at path.
func savedAs(t *testing.T, b *Board, path string) string {
	t.Helper()
	if err := b.Attach(path, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

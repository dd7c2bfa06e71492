package board

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// The run object is written as json.Marshal writes it, its plan source
// (up to 10 MB at 100k steps) quoted piece by piece: escapes, HTML
// characters, U+2028, invalid UTF-8 and multi-byte characters across the
// pieces' edges come out the same.
func TestRunWrittenAsMarshalled(t *testing.T) {
	long := strings.Repeat("steps: é ✓ 😀 <a&b> \"q\" \\ \t\n\u2028 \xff\xe2\x82 ", 5000)
	for _, src := range []string{"", "x", `"plan_source":""`, long, long[:len(long)-1], "\xe2" + long} {
		run := Run{ID: `id "plan_source":""`, PlanPath: "p<>.yaml", PlanSource: src, Vars: map[string]any{"a": "b"}, Status: StatusFailed}
		want, err := json.Marshal(&run)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		if err := writeRun(w, &run); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("source of %d bytes: written differently from json.Marshal", len(src))
		}
	}
}

// A board loaded to resume takes writes as the fully loaded one does:
// versions, compare-and-set, conflicts with another author's value (read
// from the lazy entry), deletes; and both save the same entries.
func TestLoadToResumeWritesAsLoad(t *testing.T) {
	path := t.TempDir() + "/blackboard.json"
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := Create(path, Run{ID: "r", Status: StatusRunning, PlanSource: "steps: []"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.SetClock(func() time.Time { return clock })
	big := bigText(100 << 10)
	for i, op := range []WriteOp{
		{Key: "a", Value: map[string]any{"n": 1.0, "big": big}, Author: "x", Meta: map[string]any{"why": "ü"}},
		{Key: "gone", Value: 1, Author: "x"},
		{Key: "big", Value: big, Author: "x"},
	} {
		op.ExpectVersion = -1
		if _, err := b.Write(op); err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	b.Save()
	b.Close()
	saved, _ := os.ReadFile(path)

	outcome := func(load func(string) (*Board, error)) string {
		os.WriteFile(path, saved, FileMode)
		b, err := load(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Attach(path, Options{}); err != nil {
			t.Fatal(err)
		}
		b.SetClock(func() time.Time { return clock })
		var log []string
		for _, op := range []WriteOp{
			{Key: "a", Value: "y's", Author: "y", ExpectVersion: -1},    // a conflict with x's value
			{Key: "a", Value: "again", Author: "y", ExpectVersion: 1},   // a failed compare-and-set
			{Key: "gone", Delete: true, Author: "x", ExpectVersion: -1}, // a tombstone
			{Key: "big", Value: big, Author: "y", ExpectVersion: -1},    // the same value: no conflict
			{Key: "new", Value: "n", Author: "y", ExpectVersion: 0},     // a new key
		} {
			e, err := b.Write(op)
			log = append(log, fmt.Sprint(e.Version, " ", err))
		}
		if err := b.Save(); err != nil {
			t.Fatal(err)
		}
		b.Close()
		again, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range again.Entries() {
			e.ID = ""
			data, _ := json.Marshal(e)
			out = append(out, string(data))
		}
		_, conflict := again.OpenConflict("a")
		return strings.Join(append(log, out...), "\n") + fmt.Sprint("\nopen conflict on a: ", conflict)
	}
	full, lazy := outcome(Load), outcome(LoadToResume)
	if full != lazy {
		t.Errorf("writes after Load:\n%.3000s\n\nafter LoadToResume:\n%.3000s", full, lazy)
	}
	if !strings.Contains(full, `"section":"conflicts"`) {
		t.Errorf("no conflict recorded: %.2000s", full)
	}
}

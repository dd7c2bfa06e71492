package board

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// asJSON is what JSON makes of s: each byte that is not UTF-8 U+FFFD.
func asJSON(s string) string {
	data, _ := json.Marshal(s)
	var out string
	json.Unmarshal(data, &out)
	return out
}

// TestLargeValueNotUTF8: a large value with bytes that are not UTF-8 (a
// command's binary output) is saved in the journal and the file, which
// load again (before, its text read back hashed to another key: the run
// could not be replayed, resumed or read), and reads back as JSON makes
// it (each such byte U+FFFD), as a short value does; a slice of such a
// text, or one that cuts a character, too.
func TestLargeValueNotUTF8(t *testing.T) {
	binary := strings.Repeat("ab\xffc\xe2\x82 d\x80\x80\x80\x80e", 20<<10)
	accents := strings.Repeat("é", 100<<10)
	for _, tc := range []struct {
		name   string
		values []string // entries' values
		held   string   // a step's output, held apart as the engine does
	}{
		{"entry", []string{binary}, ""},
		{"step output", nil, binary},
		{"trimmed, not UTF-8", []string{" " + binary + "\n"}, binary},
		{"a slice cutting a character", []string{accents, accents[1:], accents[:len(accents)-1]}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := t.TempDir() + "/blackboard.json"
			b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range tc.values {
				if _, err := b.Write(WriteOp{Key: fmt.Sprint("k", i), Value: v, ExpectVersion: -1}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.held != "" {
				var h Held
				s := StepRecord{Label: "bin", Visit: 1, Status: "succeeded",
					Result: json.RawMessage(`{"output":"` + h.Key(tc.held) + `"}`)}
				s.Hold(&h)
				if err := b.FinishStep(s, Entry{Section: "steps", Content: tc.held}); err != nil {
					t.Fatal(err)
				}
			}
			check := func(how string, l *Board) {
				t.Helper()
				for i, v := range tc.values {
					if e, _ := l.Get(fmt.Sprint("k", i)); e.Content != asJSON(v) {
						t.Errorf("%s: value %d did not read back as JSON makes it", how, i)
					}
				}
				if tc.held != "" {
					s, _ := l.LastStep()
					var res struct{ Output string }
					if err := json.Unmarshal(s.Result, &res); err != nil || res.Output != asJSON(tc.held) {
						t.Errorf("%s: the step's output did not read back as JSON makes it (%v)", how, err)
					}
				}
			}
			l, err := Load(path)
			if err != nil {
				t.Fatalf("from the journal: %v", err)
			}
			check("from the journal", l)
			if err := b.Save(); err != nil {
				t.Fatal(err)
			}
			if l, err = Load(path); err != nil {
				data, _ := os.ReadFile(path)
				t.Fatalf("from the file: %v\n%.300s", err, data)
			}
			check("from the file", l)
		})
	}
}

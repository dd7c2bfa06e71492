package board

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// blobBytes is the size of the values of a file's or journal's blob
// tables as written (the text of each literal, quotes included).
func blobBytes(t *testing.T, data []byte) int {
	t.Helper()
	n := 0
	for line := range bytes.Lines(data) {
		line = bytes.TrimSpace(line)
		var blobs map[string]json.RawMessage
		if bytes.HasPrefix(line, []byte(`{"n":`)) { // a journal line
			var rec struct {
				Blobs map[string]json.RawMessage `json:"blobs"`
			}
			if err := json.Unmarshal(line, &rec); err != nil {
				t.Fatal(err)
			}
			blobs = rec.Blobs
		}
		for _, v := range blobs {
			n += len(v)
		}
	}
	if bytes.HasPrefix(data, []byte("{\n")) { // the file
		var f struct {
			Blobs map[string]json.RawMessage `json:"blobs"`
		}
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatal(err)
		}
		for _, v := range f.Blobs {
			n += len(v)
		}
	}
	return n
}

// TestTrimmedAnswerStoredOnce: a run's answer and its trimmed form (the
// llm step's output, a substring of the answer in memory) are stored as
// the answer's text once, in the journal and in the file, and read back
// as they were given, byte for byte. Before, the trimmed output was a
// second value of the table (140 MB of file for a 50 MiB answer with
// newlines).
func TestTrimmedAnswerStoredOnce(t *testing.T) {
	answer := " \n" + bigText(300<<10) + "\n\n"
	lit, _ := json.Marshal(answer)
	for _, tc := range []struct {
		name string
		// more: other records holding slices of the answer.
		more func(b *Board)
	}{
		{"trimmed output", func(*Board) {}},
		{"slices besides", func(b *Board) {
			// A slice in the middle, one of the trimmed output's, and a
			// text that looks like a slice value: a string, kept as one.
			inner := strings.TrimSpace(answer)
			for i, v := range []any{answer[1000 : len(answer)-1000], inner[5 : len(inner)-5],
				`{"slice_of":"` + hashText(answer) + `","start":0,"end":9}` + strings.Repeat(" ", BlobMin)} {
				if _, err := b.Write(WriteOp{Key: fmt.Sprint("k", i), Value: v, ExpectVersion: -1}); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"copies of parts", func(b *Board) {
			// Not substrings in memory: copies (an llm step's edits are
			// its answer trimmed with a newline added), found by content.
			for i, v := range []string{strings.TrimSpace(answer) + "\n", strings.Clone(answer[:len(answer)/2]),
				strings.Clone(answer[len(answer)/3:])} {
				if _, err := b.Write(WriteOp{Key: fmt.Sprint("c", i), Value: v, ExpectVersion: -1}); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := t.TempDir() + "/blackboard.json"
			b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			rec, conv, step, audit := answerRecords(answer)
			// In the order agents.(*Session).record and the engine add them.
			if _, err := b.Append(conv); err != nil {
				t.Fatal(err)
			}
			if err := b.AddRecording(rec); err != nil {
				t.Fatal(err)
			}
			if err := b.FinishStep(step, audit); err != nil {
				t.Fatal(err)
			}
			tc.more(b)
			want := viewOf(b).normal(t)
			limit := len(lit) + len(lit)/10 + 2*BlobMin // once, and the look-alike
			journal, _ := os.ReadFile(JournalPath(path))
			if n := blobBytes(t, journal); n > limit {
				t.Errorf("the journal's blobs hold %d bytes for an answer of %d as JSON: want it once", n, len(lit))
			}
			fromJournal, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if viewOf(fromJournal).normal(t) != want {
				t.Error("the board read from the journal differs from the one written")
			}
			if err := b.Save(); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(path)
			if n := blobBytes(t, data); n > limit {
				t.Errorf("the file's blobs hold %d bytes for an answer of %d as JSON: want it once", n, len(lit))
			}
			loaded, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if viewOf(loaded).normal(t) != want {
				t.Error("the board read from the file differs from the one written")
			}
			s, _ := loaded.LastStep()
			if !bytes.Equal(s.Result, step.Result) {
				t.Error("the step's result did not read back byte for byte")
			}
			// Saved again after a resume's load (entries written back as
			// read, their values copied over): still once, still the same.
			r, err := LoadToResume(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Attach(path, Options{}); err != nil {
				t.Fatal(err)
			}
			if err := r.Save(); err != nil {
				t.Fatal(err)
			}
			data, _ = os.ReadFile(path)
			if n := blobBytes(t, data); n > limit {
				t.Errorf("saved after a resume, the file's blobs hold %d bytes for an answer of %d as JSON: want it once", n, len(lit))
			}
			again, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if viewOf(again).normal(t) != want {
				t.Error("the board saved after a resume reads back different")
			}
		})
	}
}

// TestTrimmedAnswerLoadedOnce: loading a run whose step output is its
// answer trimmed keeps the answer's text once (the output a substring of
// it), not a second decoded copy (replay --offline of a 50 MiB answer
// with newlines would hold both).
func TestTrimmedAnswerLoadedOnce(t *testing.T) {
	answer := bigText(8<<20) + "\n"
	path := t.TempDir() + "/blackboard.json"
	b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec, conv, step, audit := answerRecords(answer)
	b.Append(conv)
	b.AddRecording(rec)
	if err := b.FinishStep(step, audit); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	n := len(answer)
	b, rec, step, answer = nil, Recording{}, StepRecord{}, ""
	var loaded *Board
	grew := heapAfter(func() {
		if loaded, err = Load(path); err != nil {
			t.Fatal(err)
		}
	})
	perByte := float64(grew) / float64(n)
	t.Logf("loaded board: %.2f bytes live per byte of the answer", perByte)
	if perByte > 1.4 {
		t.Errorf("the loaded board keeps %.2f bytes per byte of the answer: want at most 1.4 (its text once, the trimmed output a slice of it)", perByte)
	}
	s, _ := loaded.LastStep()
	var res struct{ Output string }
	if err := json.Unmarshal(s.Result, &res); err != nil || res.Output != strings.TrimSpace(loaded.Entries()[0].Content.(string)) {
		t.Errorf("the step's output did not read back: %v", err)
	}
}

// TestBlobSliceDamage: a slice value that is malformed, refers to a value
// the file does not hold, reaches past its text, is a cycle or does not
// hash to its key is an error naming the value; never a panic, never a
// wrong text.
func TestBlobSliceDamage(t *testing.T) {
	answer := "\n" + bigText(100<<10) + "\n"
	path := t.TempDir() + "/blackboard.json"
	b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec, conv, step, audit := answerRecords(answer)
	b.Append(conv)
	b.AddRecording(rec)
	b.FinishStep(step, audit)
	journal, _ := os.ReadFile(JournalPath(path))
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	whole, trimmed := hashText(answer), hashText(strings.TrimSpace(answer))
	end := 1 + len(strings.TrimSpace(answer))
	slice := fmt.Sprintf(`{"slice_of":"%s","start":1,"end":%d}`, whole, end)
	if !bytes.Contains(good, []byte(`"`+trimmed+`": `+slice)) || !bytes.Contains(journal, []byte(`"`+trimmed+`":`+slice)) {
		t.Fatalf("the trimmed output is not written as a slice of the answer:\n%s", regexp.MustCompile(`"sha256:[0-9a-f]{64}": \{[^}]*\}`).Find(good))
	}
	other := hashText("x")
	for _, tc := range []struct {
		name, slice, want string
		journal           bool
	}{
		{"out of range", fmt.Sprintf(`{"slice_of":"%s","start":1,"end":%d}`, whole, len(answer)+1), "whose text is", false},
		{"far out of range", fmt.Sprintf(`{"slice_of":"%s","start":1,"end":%d}`, whole, int64(1)<<62), "whose text is shorter", false},
		{"shifted", fmt.Sprintf(`{"slice_of":"%s","start":0,"end":%d}`, whole, end-1), "hashes to", false},
		{"missing blob", fmt.Sprintf(`{"slice_of":"%s","start":1,"end":3}`, other), "a slice of " + other + ", which is not in the file's blobs", false},
		{"of itself", fmt.Sprintf(`{"slice_of":"%s","start":0,"end":3}`, trimmed), "cycle", false},
		{"start after end", fmt.Sprintf(`{"slice_of":"%s","start":5,"end":3}`, whole), "want 0 <= start <= end", false},
		{"negative start", fmt.Sprintf(`{"slice_of":"%s","start":-1,"end":3}`, whole), "want 0 <= start <= end", false},
		{"no end", fmt.Sprintf(`{"slice_of":"%s","start":1}`, whole), `needs "slice_of", "start" and "end"`, false},
		{"unknown field", fmt.Sprintf(`{"slice_of":"%s","start":1,"end":3,"step":2}`, whole), "unknown field", false},
		{"not a key", `{"slice_of":"md5:1","start":1,"end":3}`, "is not sha256:<64 hex digits>", false},
		{"start not a number", fmt.Sprintf(`{"slice_of":"%s","start":"1","end":3}`, whole), "nor a slice", false},
		{"an array", `[1,2]`, "not a JSON string", false},
		{"journal: out of range", fmt.Sprintf(`{"slice_of":"%s","start":1,"end":%d}`, whole, len(answer)+1), "whose text is", true},
		{"journal: missing blob", fmt.Sprintf(`{"slice_of":"%s","start":1,"end":3}`, other), "which is not in the file's blobs", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := t.TempDir() + "/blackboard.json"
			if tc.journal {
				c, _ := Create(p, Run{ID: "r", Status: StatusRunning}, Options{})
				c.Close()
				os.WriteFile(JournalPath(p), bytes.Replace(journal, []byte(`"`+trimmed+`":`+slice), []byte(`"`+trimmed+`":`+tc.slice), 1), 0o600)
			} else {
				os.WriteFile(p, bytes.Replace(good, []byte(`"`+trimmed+`": `+slice), []byte(`"`+trimmed+`": `+tc.slice), 1), 0o600)
			}
			for _, load := range []func(string) (*Board, error){Load, LoadForRead} {
				_, err := load(p)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Load: %v; want an error saying %q", err, tc.want)
				}
				if !strings.Contains(err.Error(), trimmed) {
					t.Errorf("the error does not name the value: %v", err)
				}
			}
		})
	}
}

// TestBlobSliceOfSlice: a slice of a value that is itself a slice (a
// journal line's, of a value the file holds as a slice) reads back.
func TestBlobSliceOfSlice(t *testing.T) {
	answer := "\n" + bigText(100<<10) + "\n"
	inner := strings.TrimSpace(answer)
	path := t.TempDir() + "/blackboard.json"
	b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	part := inner[1 : len(inner)-4] // its last character, 4 bytes, left out
	for i, v := range []string{answer, inner, part} {
		if _, err := b.Write(WriteOp{Key: fmt.Sprint("k", i), Value: v, ExpectVersion: -1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	// The third, written as a slice of the answer, made one of the second.
	k2 := hashText(part)
	was := fmt.Sprintf(`"%s": {"slice_of":"%s","start":2,"end":%d}`, k2, hashText(answer), len(inner)-3)
	now := fmt.Sprintf(`"%s": {"slice_of":"%s","start":1,"end":%d}`, k2, hashText(inner), len(inner)-4)
	if !bytes.Contains(data, []byte(was)) {
		t.Fatalf("not written as a slice of the answer: want %s", was)
	}
	os.WriteFile(path, bytes.Replace(data, []byte(was), []byte(now), 1), 0o600)
	loaded, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := loaded.Get("k2"); e.Content != part {
		t.Error("a slice of a slice did not read back")
	}
	// Saved after a resume's load, the slice's value is written with it.
	r, err := LoadToResume(path)
	if err != nil {
		t.Fatal(err)
	}
	r.Attach(path, Options{})
	if err := r.Save(); err != nil {
		t.Fatal(err)
	}
	again, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := again.Get("k2"); e.Content != part {
		t.Error("a slice of a slice did not read back after a resume saved it")
	}
}

// FuzzBlobSlice: any slice value is taken (and reads back as the bytes it
// names) or refused with an error; never a panic.
func FuzzBlobSlice(f *testing.F) {
	text := "héllo, \"world\"\n<&>" + strings.Repeat("x", 40)
	lit, _ := json.Marshal(text)
	base := hashText(text)
	f.Add(fmt.Sprintf(`{"slice_of":"%s","start":0,"end":5}`, base))
	f.Add(fmt.Sprintf(`{"slice_of":"%s","start":1,"end":3}`, base))
	f.Add(fmt.Sprintf(`{"slice_of":"%s","start":3,"end":300}`, base))
	f.Add(fmt.Sprintf(`{"slice_of":"%s","start":-3,"end":3}`, base))
	f.Add(fmt.Sprintf(`{"slice_of":"%s","start":1e3,"end":3}`, base))
	f.Add(`{"slice_of":"sha256:00","start":1,"end":3}`)
	f.Add(`{}`)
	f.Add(`{"slice_of":null}`)
	f.Fuzz(func(t *testing.T, v string) {
		tb := newBlobTable()
		if err := tb.put(base, lit); err != nil {
			t.Fatal(err)
		}
		var r sliceRef
		if err := json.Unmarshal([]byte(v), &r); err != nil || r.Start == nil || r.End == nil ||
			*r.Start < 0 || *r.End < *r.Start || *r.End > int64(len(text)) {
			r = sliceRef{}
		}
		key := base
		if r.Start != nil {
			key = hashText(text[*r.Start:*r.End])
		}
		if key == base {
			key = hashText(v)
		}
		err := tb.put(key, []byte(v))
		if err == nil {
			err = tb.link()
		}
		if err != nil {
			return
		}
		if r.Start == nil || tb.text(key) != text[*r.Start:*r.End] {
			t.Fatalf("%s taken, reads %q", v, tb.text(key))
		}
	})
}

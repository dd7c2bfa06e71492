package board

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// bigText is a large model answer: newlines, quotes and HTML characters
// (escaped in JSON), a character outside the BMP.
func bigText(n int) string {
	var sb strings.Builder
	for sb.Len() < n {
		sb.WriteString("line <b>\"quoted\"</b> & more\tend 😀\n")
	}
	return sb.String()
}

// writeBig puts text where a model answer goes: the recording, the
// conversation entry, the step's result, its audit entry and inputs, a
// key's value nested in a map.
func writeBig(t *testing.T, b *Board, text string) {
	t.Helper()
	resp, _ := json.Marshal(map[string]any{"text": text, "model": "m"})
	if err := b.AddRecording(Recording{Label: "ask", Visit: 1, Kind: "llm", Call: 1, RequestSHA256: "x",
		Request: json.RawMessage(`{"messages":[]}`), Response: resp}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(Entry{Section: "llm", Role: "assistant", Label: "ask", Content: text, Meta: map[string]any{"call": 1}}); err != nil {
		t.Fatal(err)
	}
	result, _ := json.Marshal(map[string]any{"output": text, "tokens": 3})
	if err := b.FinishStep(StepRecord{Label: "ask", Visit: 1, Status: "succeeded", Result: result,
		Inputs: map[string]string{"prompt": text}},
		Entry{Section: "steps", Role: "step", Label: "ask", Content: text}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write(WriteOp{Key: "answer", Value: map[string]any{"text": text, "n": 1}, ExpectVersion: -1}); err != nil {
		t.Fatal(err)
	}
}

type boardView struct {
	Entries    []Entry
	Steps      []StepRecord
	Recordings []Recording
}

func viewOf(b *Board) boardView {
	return boardView{b.Entries(), b.Steps(), b.Recordings()}
}

// normal makes two views comparable: raw JSON compared as values.
func (v boardView) normal(t *testing.T) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A large value is written once in the file and once in the journal,
// however many records hold it, and reads back the same from either.
func TestLargeValueStoredOnce(t *testing.T) {
	text := bigText(300 << 10)
	path := t.TempDir() + "/blackboard.json"
	b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeBig(t, b, text)
	want := viewOf(b)

	lit, _ := json.Marshal(text) // as the file holds it
	size := int64(len(lit))
	// The journal (the run was killed before saving).
	if fi, err := os.Stat(JournalPath(path)); err != nil || fi.Size() > size*12/10 {
		t.Fatalf("journal: %v, %d bytes for a value of %d held 6 times: want it once", err, fi.Size(), size)
	}
	fromJournal, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := viewOf(fromJournal); got.normal(t) != want.normal(t) {
		t.Fatal("the board read from file and journal differs from the one written")
	}
	if s := fromJournal.Entries()[1].Content.(string); s != text {
		t.Fatalf("the conversation entry's content read back is %d bytes, want the %d written", len(s), len(text))
	}

	// A resumed run writing the same value again journals only a reference.
	r, err := OpenAppend(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(JournalPath(path))
	if _, err := r.Write(WriteOp{Key: "again", Value: text, ExpectVersion: -1}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(JournalPath(path))
	if grew := after.Size() - before.Size(); grew > 4<<10 {
		t.Fatalf("writing a value the journal holds added %d bytes to it", grew)
	}
	want = viewOf(r)

	// The file, saved.
	if err := r.Save(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if int64(len(data)) > size*12/10 {
		t.Fatalf("blackboard.json is %d bytes for a value of %d held 7 times: want it once", len(data), size)
	}
	loaded, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := viewOf(loaded); got.normal(t) != want.normal(t) {
		t.Fatal("the board read from the saved file differs from the one written")
	}
	if e, _ := loaded.Get("answer"); e.Content.(map[string]any)["text"] != text {
		t.Fatal("the key's nested value did not read back")
	}
	// Read whole by encoding/json (a file not in runner's layout), too.
	var buf bytes.Buffer
	json.Indent(&buf, data, "", "\t")
	indented, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if viewOf(indented).normal(t) != want.normal(t) {
		t.Fatal("the board read from the reformatted file differs")
	}
	// Entries holding the same value share it in memory.
	es := loaded.Entries()
	if a, b := es[0].Content.(string), es[1].Content.(string); !sameString(a, b) {
		t.Error("two entries holding the same large value hold two copies of it")
	}
}

func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// A file written before the blob table (every value inline) loads as it
// did, and saving it moves its large values to the table.
func TestOldFormatLoads(t *testing.T) {
	f, err := os.Open("testdata/old-format.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(`"blobs"`)) {
		t.Fatal("the fixture should be in the old format")
	}
	path := t.TempDir() + "/blackboard.json"
	os.WriteFile(path, data, 0o600)
	old, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := old.Get("answer")
	answer, _ := e.Content.(string)
	if !ok || !strings.HasPrefix(answer, "line one\nline <two> & \"three\" yyy") || !strings.HasSuffix(answer, " end") || len(answer) < 70<<10 {
		t.Fatalf("key answer from the old file: %.60q (%d bytes)", answer, len(answer))
	}
	want := viewOf(old).normal(t)
	o, err := Open(path, Options{}) // folds and saves in the new format
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	saved, _ := os.ReadFile(path)
	if !bytes.Contains(saved, []byte(`"blobs"`)) || len(saved) > len(data)/3 {
		t.Fatalf("saved again: %d bytes (was %d), blobs table: %v", len(saved), len(data), bytes.Contains(saved, []byte(`"blobs"`)))
	}
	again, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if viewOf(again).normal(t) != want {
		t.Fatal("the old file saved in the new format reads back different")
	}
}

// A damaged table or reference is an error that names the record, never
// a panic and never a reference read as the value.
func TestBlobDamage(t *testing.T) {
	text := bigText(100 << 10)
	dir := t.TempDir()
	path := dir + "/blackboard.json"
	b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeBig(t, b, text)
	journal, _ := os.ReadFile(JournalPath(path))
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	key := hashText(text)
	lit, _ := json.Marshal(text)
	other, _ := json.Marshal(text + "!")
	for _, tc := range []struct {
		name, file, journal, want string
	}{
		{"missing blob", strings.Replace(string(good), `"`+key+`": `+string(lit), `"`+hashText("x")+`": "x"`, 1), "",
			"names \"" + key + "\", which is not in the file's blobs"},
		{"text does not match its key", strings.Replace(string(good), string(lit), string(other), 1), "",
			"its text hashes to"},
		{"key not a sha256", strings.Replace(string(good), `"`+key+`": `, `"md5:1": `, 1), "",
			`key "md5:1" is not sha256:<64 hex digits>`},
		{"value not a string", strings.Replace(string(good), `"`+key+`": `+string(lit), `"`+key+`": 12`, 1), "",
			"not a JSON string"},
		{"journal blob missing", "", strings.Replace(string(journal), `"`+key+`":`+string(lit), `"`+hashText("y")+`":"y"`, 1),
			"not in the file's blobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := t.TempDir() + "/blackboard.json"
			if tc.file != "" {
				os.WriteFile(p, []byte(tc.file), 0o600)
			} else {
				c, _ := Create(p, Run{ID: "r", Status: StatusRunning}, Options{})
				c.Close()
				os.WriteFile(JournalPath(p), []byte(tc.journal), 0o600)
			}
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v; want an error saying %q", err, tc.want)
			}
			if tc.name == "missing blob" && !strings.Contains(err.Error(), "step ask visit 1") && !strings.Contains(err.Error(), "entry seq") {
				t.Errorf("the error does not name the record: %v", err)
			}
		})
	}
}

// A string that looks like a reference is a reference only where its
// record lists it: a value equal to a large value's key is kept as
// written, beside that value or alone.
func TestBlobLookalikeKept(t *testing.T) {
	text := bigText(100 << 10)
	key := hashText(text)
	path := t.TempDir() + "/blackboard.json"
	b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The same record holds the value and a string equal to its key.
	b.Append(Entry{Section: "s", Content: map[string]any{"text": text, "digest": key}})
	// A record holds only the key, as text.
	b.Append(Entry{Section: "s", Content: key})
	res, _ := json.Marshal(map[string]any{"output": text, "sum": key})
	b.AddStep(StepRecord{Label: "x", Visit: 1, Status: "succeeded", Result: res})
	want := viewOf(b).normal(t)
	for _, save := range []bool{false, true} {
		if save {
			if err := b.Save(); err != nil {
				t.Fatal(err)
			}
		}
		got, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if viewOf(got).normal(t) != want {
			t.Fatalf("saved=%v: a string equal to a key did not read back as written", save)
		}
		if c := got.Entries()[1].Content; c != key {
			t.Fatalf("saved=%v: the entry holding only the key reads %.40q", save, c)
		}
	}
}

// Saving a board whose large value several records hold allocates a
// fraction of the value (the file is streamed, the value written once);
// loading it, a few times the value, not once per record.
func TestLargeValueMemory(t *testing.T) {
	text := bigText(8 << 20)
	path := t.TempDir() + "/blackboard.json"
	b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeBig(t, b, text)
	alloc := func(f func()) uint64 {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		f()
		runtime.ReadMemStats(&m1)
		return m1.TotalAlloc - m0.TotalAlloc
	}
	lit, _ := json.Marshal(text)
	n := uint64(len(lit)) // the value as the file holds it
	if a := alloc(func() {
		if err := b.Save(); err != nil {
			t.Fatal(err)
		}
	}); a > n/4 {
		t.Errorf("Save allocated %d bytes for a value of %d: want under a quarter of it", a, n)
	}
	var loaded *Board
	// The file, the text (decoded once, in one allocation: 4.6 times the
	// value in all while json.Unmarshal decoded it twice), the step
	// result's and the recording's JSON.
	if a := alloc(func() { loaded, err = Load(path) }); err != nil || a > 4*n {
		t.Errorf("Load allocated %d bytes (%.1f times the value), err %v: want at most 4 (the file, the text, the result and recording that hold it in JSON)", a, float64(a)/float64(n), err)
	}
	if !reflect.DeepEqual(loaded.Entries()[1].Content, text) {
		t.Error("the value did not read back")
	}
}

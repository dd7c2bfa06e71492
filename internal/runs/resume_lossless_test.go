package runs_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/runs"
)

// savedFile is blackboard.json decoded as plain JSON: what any reader of
// the file sees, fields runner does not know included.
type savedFile struct {
	Entries []map[string]any           `json:"entries"`
	Steps   []map[string]any           `json:"steps"`
	Blobs   map[string]json.RawMessage `json:"blobs"`
}

func readSavedFile(t *testing.T, path string) savedFile {
	t.Helper()
	var f savedFile
	if err := json.Unmarshal(mustRead(t, path), &f); err != nil {
		t.Fatalf("%s is not JSON: %v", path, err)
	}
	return f
}

// failedWithEntries is a failed run (its last step fails until a file
// "marker" exists) whose file holds entries of every shape: unicode,
// escapes, control characters, a large value (kept in the blob table),
// meta, a TTL, a tombstone, numbers, nested values, and one written by
// a newer runner (a field this one does not know). The marker is made.
func failedWithEntries(t *testing.T) (dir, path string) {
	dir = t.TempDir()
	plan := writePlan(t, dir, `version: 1
steps:
  - {label: a, type: board, op: write, key: plan, value: "é ✓ \"q\" \\ <b> & ${{ 1 + 1 }}"}
  - {label: b, type: command, run: 'test -f marker'}
`)
	path = filepath.Join(dir, "bb.json")
	res, err := runs.Start(context.Background(), runs.Options{Plan: plan, Workdir: dir, Board: path}, runs.Env{Warnings: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	res.Board.Close()
	if res.Err == nil {
		t.Fatal("the run did not fail")
	}
	b, err := board.Open(path, board.Options{})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("large ✓ \"value\"\n", 100<<10/16)
	for i, op := range []board.WriteOp{
		{Key: "uni", Value: "héllo ✓ 😀 \u2028 \u0001 tab\t nl\n <&> \\ \"", Author: "me", Meta: map[string]any{"why": "ünï", "n": 1.5}},
		{Key: "big", Value: big, Author: "me", Meta: map[string]any{"big": big}},
		{Key: "nested", Value: map[string]any{"a": []any{1.0, "two", nil, true, map[string]any{"x": 1e300}}}, Author: "you"},
		{Key: "ttl", Value: "soon", TTL: time.Hour},
		{Key: "gone", Value: 1},
		{Key: "gone", Delete: true},
		{Key: "uni", Value: "second", Author: "you", Handoff: true},
	} {
		op.ExpectVersion = -1
		if _, err := b.Write(op); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	// A newer runner's field, on the file's first entry of key uni.
	data := mustRead(t, path)
	i := strings.Index(string(data), `"key":"uni"`)
	if i < 0 {
		t.Fatalf("no entry of key uni in %s", data)
	}
	data = []byte(string(data[:i]) + `"from_the_future":{"kept":["yes",1]},` + string(data[i:]))
	if err := os.WriteFile(path, data, board.FileMode); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "marker"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

// A resume that re-runs one step leaves a file holding every entry of
// the one it resumed, each equal as JSON to what it was (fields a newer
// runner wrote included: the resumed board writes the entries it did not
// touch back as it read them), its large values in the blob table, then
// the resumed run's own entries; and it reads as the same board.
func TestResumeKeepsEveryEntry(t *testing.T) {
	_, path := failedWithEntries(t)
	before := readSavedFile(t, path)
	beforeBoard, err := board.Parse(mustRead(t, path))
	if err != nil {
		t.Fatal(err)
	}
	res, err := runs.Resume(context.Background(), path, runs.ResumeOptions{}, runs.Env{Warnings: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	res.Board.Close()
	if res.Err != nil {
		t.Fatalf("the resumed run failed: %v", res.Err)
	}
	after := readSavedFile(t, path)
	if len(after.Entries) <= len(before.Entries) {
		t.Fatalf("%d entries after the resume, %d before: want the resumed step's added", len(after.Entries), len(before.Entries))
	}
	for i, e := range before.Entries {
		if !reflect.DeepEqual(e, after.Entries[i]) {
			t.Errorf("entry %d changed in the resume:\n before %v\n after  %v", i+1, e, after.Entries[i])
		}
		refs, _ := e["blob_refs"].([]any)
		for _, k := range refs {
			if k := k.(string); string(after.Blobs[k]) != string(before.Blobs[k]) {
				t.Errorf("entry %d: blob %s lost or changed", i+1, k)
			}
		}
	}
	if _, ok := after.Entries[0]["from_the_future"]; ok {
		t.Errorf("the field was put on the wrong entry")
	}
	found := false
	for _, e := range after.Entries {
		_, ok := e["from_the_future"]
		found = found || ok
	}
	if !found {
		t.Error("the newer runner's field was dropped")
	}
	for i, s := range before.Steps {
		if !reflect.DeepEqual(s, after.Steps[i]) {
			t.Errorf("step record %d changed: %v, then %v", i, s, after.Steps[i])
		}
	}
	afterBoard, err := board.Parse(mustRead(t, path))
	if err != nil {
		t.Fatal(err)
	}
	js := func(v any) string { data, _ := json.Marshal(v); return string(data) }
	old, now := beforeBoard.Entries(), afterBoard.Entries()
	for i := range old {
		if js(old[i]) != js(now[i]) {
			t.Errorf("entry %d reads differently after the resume:\n %.200s\n %.200s", i+1, js(old[i]), js(now[i]))
		}
	}
	if e, ok := afterBoard.KeyVersion("big", 1); !ok || !strings.HasPrefix(e.Content.(string), "large ✓") || e.Meta["big"] != e.Content {
		t.Error("the large value did not read back")
	}
}

// A damaged saved run is refused by resume with an error naming the file
// and what is wrong, and left as it was: nothing is written, no journal
// is started. (Resume reads entries' contents lazily; their damage must
// not get past it.)
func TestResumeRefusesADamagedBoard(t *testing.T) {
	tests := []struct {
		name   string
		damage func(string) string
		want   string
	}{
		{"truncated", func(s string) string { return s[:len(s)/2] }, "not a blackboard file"},
		{"cut mid-entry", func(s string) string {
			i := strings.Index(s, `"key":"nested"`)
			return s[:i] + "\n" + s[strings.Index(s[i:], "\n")+i:]
		}, "entry"},
		{"meta not an object", func(s string) string {
			return strings.Replace(s, `"meta":{"n":1.5,"why":"ünï"}`, `"meta":5`, 1)
		}, `"meta" is not an object`},
		{"meta a string", func(s string) string {
			return strings.Replace(s, `"meta":{"n":1.5,"why":"ünï"}`, `"meta":"x"`, 1)
		}, `"meta" is not an object`},
		{"a blob missing", func(s string) string {
			i := strings.Index(s, "\n \"blobs\": {\n")
			j := strings.Index(s, "\n },\n \"journal_n\"")
			return s[:i-1] + s[j+len("\n }"):] // the comma before it too
		}, "not in the file's blobs"},
		{"a time that is not one", func(s string) string {
			return strings.Replace(s, `"key":"ttl"`, `"key":"ttl","ts":"yesterday"`, 1)
		}, "entry"},
		{"seq out of order", func(s string) string {
			return strings.Replace(s, `"seq":3,`, `"seq":30,`, 1)
		}, "out of order"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, path := failedWithEntries(t)
			bad := tc.damage(string(mustRead(t, path)))
			if bad == string(mustRead(t, path)) {
				t.Fatal("the damage changed nothing")
			}
			if err := os.WriteFile(path, []byte(bad), board.FileMode); err != nil {
				t.Fatal(err)
			}
			_, err := runs.Resume(context.Background(), path, runs.ResumeOptions{}, runs.Env{Warnings: io.Discard})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("resume of a damaged board: %v; want an error naming %s and saying %q", err, path, tc.want)
			}
			if string(mustRead(t, path)) != bad {
				t.Error("the damaged file was changed")
			}
			if _, err := os.Stat(board.JournalPath(path)); !os.IsNotExist(err) {
				t.Errorf("a journal was started beside the damaged file: %v", err)
			}
		})
	}
}

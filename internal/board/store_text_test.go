package board

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The layout found reading a file a buffer at a time is the one found in
// the file held whole, whatever its lines' lengths and ends.
func TestScanFileAsScanLayout(t *testing.T) {
	long := strings.Repeat("x", 3<<20/2) // longer than the scan's buffer
	run := ` "run": {"id":"r","plan_source":"` + long + `"},`
	lists := "\n \"steps\": [\n  {\"label\":\"a\"},\n  {\"label\":\"b\"}\n ],\n \"entries\": [\n  {\"id\":\"e\"}\n ],\n \"recordings\": [],\n \"blobs\": {\n  \"k\": \"" + long + "\"\n }"
	for name, text := range map[string]string{
		"as runner writes it": "{\n \"format\": \"x\",\n" + run + lists + ",\n \"journal_n\": 0\n}\n",
		"no final newline":    "{\n" + run + lists + "\n}",
		"CRLF lines":          strings.ReplaceAll("{\n"+run+lists+"\n}\n", "\n", "\r\n"),
		"a list never closed": "{\n \"steps\": [\n  {\"label\":\"a\"}\n",
		"a name at the end":   "{\n \"entries\": [",
		"lists out of order":  "{\n \"entries\": [\n  {}\n ],\n \"steps\": [\n  {}\n ]\n}\n",
		"a long line alone":   long,
		"one byte":            "{",
		"empty lines":         "\n\n\n",
	} {
		path := t.TempDir() + "/blackboard.json"
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := scanFile(f, len(text))
		f.Close()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if want := scanLayout([]byte(text)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: read a buffer at a time, the layout is\n%+v\nread whole\n%+v", name, got, want)
		}
	}
}

// A large file is read a part at a time into the board its whole bytes
// make, by every loader.
func TestReadInParts(t *testing.T) {
	path := t.TempDir() + "/blackboard.json"
	b, err := Create(path, Run{ID: "r", Status: StatusRunning, PlanSource: "steps: []"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	big := bigText(70 << 10)
	for i := range 3*decodeBatch + 5 {
		op := WriteOp{Key: fmt.Sprint("k", i%70), Value: fmt.Sprint("v", i), Author: "a", ExpectVersion: -1}
		if i%2000 == 3 {
			op.Value = big
		}
		if _, err := b.Write(op); err != nil {
			t.Fatal(err)
		}
		if err := b.AddStep(StepRecord{Label: fmt.Sprint("s", i), Visit: 1, Status: "succeeded", Inputs: map[string]string{"i": fmt.Sprint(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.AddRecording(Recording{Label: "s1", Visit: 1, Kind: "model", Call: 1, Response: json.RawMessage(strconv.Quote(big))}); err != nil {
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
	if len(data) < settleMin {
		t.Fatalf("the file is %d bytes: not one read in parts", len(data))
	}
	want, err := parse(data)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := scanFile(f, len(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, lazy := range []*lineSource{nil, newLineSource(path, f), newLineSource(path, nil)} {
		got, err := parseLines(&text{f: f, size: len(data)}, &l, lazy)
		if err != nil {
			t.Fatalf("read in parts (lazy %v): %v", lazy != nil, err)
		}
		if !reflect.DeepEqual(got.Steps(), want.Steps()) || !reflect.DeepEqual(got.Recordings(), want.Recordings()) {
			t.Errorf("lazy %v: the steps or recordings read in parts differ from the file's", lazy != nil)
		}
		sameEntries(t, fmt.Sprintf("lazy %v", lazy != nil), got.Entries(), want.Entries())
		if got.Run().PlanSource != want.Run().PlanSource || got.Run().ID != "r" {
			t.Errorf("lazy %v: the run read in parts is %+v", lazy != nil, got.Run())
		}
	}
	// A part that does not read as runner writes it is an error here
	// (load then reads the file whole, whose error says where).
	cut := l
	cut.at[1] = append([]int(nil), l.at[1]...)
	cut.at[1][5] += 4 // the fifth entry's line runs into the sixth
	if _, err := parseLines(&text{f: f, size: len(data)}, &cut, nil); err == nil || !strings.Contains(err.Error(), "entry 5:") {
		t.Errorf("a line read wrong: %v", err)
	}
}

package plans

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// A responses file written as JSON reads into the same nodes (kinds,
// tags, values, lines and columns) as the YAML parser made of it, so the
// answers, and the messages about a wrong one, are what they were.
func TestResponsesJSONSameAsYAML(t *testing.T) {
	for _, src := range []string{
		`{"ask": ["one", "two"], "fix": "three"}`,
		`["a", {"text": "b", "tool_calls": [{"name": "read", "args": {"path": "x.go", "n": 3, "f": 1.5, "e": -2E+3, "ok": true, "no": null}}]}]`,
		"{\n  \"ask\": [\n    \"caf\u00e9 \\\"quoted\\\" \\u00e9\\n\",\n\t\"\u00e9\u00e9\", \"x\"\n  ],\n  \"b\": {}, \"c\": []\n}\n",
		`  [ "\u00e9 tail" , "a\\b/c" ]  `,
		`"just a file name"`,
		`{"ask": {"text": 5}}`,
		`{"ask": [1, 2]}`,
		`{"unknown": {"texts": "x"}}`,
	} {
		var want yaml.Node
		if err := yaml.Unmarshal([]byte(src), &want); err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		got, ok := jsonNodes([]byte(src))
		if !ok {
			t.Fatalf("%q: not read as JSON", src)
		}
		if d := nodeDiff("", &want, got); d != "" {
			t.Errorf("%q: %s", src, d)
		}
		a, errA := parseResponsesFile("r.json", []byte(src))
		b, errB := parseYAMLResponses("r.json", []byte(src))
		if !reflect.DeepEqual(stripNodes(a), stripNodes(b)) || errString(errA) != errString(errB) {
			t.Errorf("%q: JSON path gives %+v, %v; YAML path %+v, %v", src, stripNodes(a), errA, stripNodes(b), errB)
		}
	}
}

// What is not exactly one JSON value goes to the YAML parser, whose
// message says what is wrong and where; nothing is accepted that YAML
// would refuse, and YAML files read as before.
func TestResponsesNotJSONReadAsYAML(t *testing.T) {
	for _, src := range []string{
		`{"ask": ["one",]}`,
		`{"ask": "one"`,
		`{"ask": "one"} trailing`,
		"{\"ask\": \"tab\there\"}",
		`{"ask": "bad \q escape"}`,
		`{"ask": 01}`,
		`{"ask": tru}`,
		"ask:\n  - one\n  - two\n",
		"- &a one\n- *a\n",
		"\xff\xfe",
		"",
		strings.Repeat("[", jsonDepthLimit+5) + strings.Repeat("]", jsonDepthLimit+5),
	} {
		if _, ok := jsonNodes([]byte(src)); ok {
			t.Errorf("%q: read as JSON", src)
		}
		a, errA := parseResponsesFile("r.yaml", []byte(src))
		b, errB := parseYAMLResponses("r.yaml", []byte(src))
		if !reflect.DeepEqual(stripNodes(a), stripNodes(b)) || errString(errA) != errString(errB) {
			t.Errorf("%q: got %+v, %v; want %+v, %v", src, stripNodes(a), errA, stripNodes(b), errB)
		}
	}
}

// Loading a responses file with one large answer, written as JSON the way
// the large-answer benchmark writes it, allocates the file once and little
// else: the answer is the file's bytes (issue 22; yaml.v3 allocated about
// six times the answer reading it).
func TestLargeResponseFileMemory(t *testing.T) {
	const size = 8 << 20
	dir := t.TempDir()
	path := filepath.Join(dir, "answers.json")
	src, _ := json.Marshal(map[string][]string{"ask": {strings.Repeat("x", size)}})
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, err := LoadResponsesFile(filepath.Join(dir, "plan.yaml"), "answers.json")
	runtime.ReadMemStats(&after)
	if err != nil || len(resp) != 1 || len(resp[0].Text) != size || resp[0].Label != "ask" {
		t.Fatalf("got %d answers, err %v", len(resp), err)
	}
	perByte := float64(after.TotalAlloc-before.TotalAlloc) / size
	t.Logf("loading allocated %.2f bytes per byte of the answer", perByte)
	if perByte > 1.2 {
		t.Errorf("loading a %d-byte answer allocated %.2f bytes per byte of it; want at most 1.2 (the file, read once)", size, perByte)
	}
}

func parseYAMLResponses(file string, src []byte) ([]Response, error) {
	r := &Reporter{File: file}
	doc, yerr := parseYAML(file, src)
	if yerr != nil {
		r.List = append(r.List, yerr)
		return nil, r.Err()
	}
	if !checkNodes(r, doc) {
		return nil, r.Err()
	}
	return ParseResponses(r, doc, "responses file"), r.Err()
}

func stripNodes(rs []Response) []Response {
	out := make([]Response, len(rs))
	for i, r := range rs {
		r.Node = nil
		out[i] = r
	}
	return out
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func nodeDiff(path string, want, got *yaml.Node) string {
	if want.Kind != got.Kind || want.Tag != got.Tag || want.Value != got.Value ||
		want.Line != got.Line || want.Column != got.Column || len(want.Content) != len(got.Content) {
		return path + ": want " + describeNode(want) + ", got " + describeNode(got)
	}
	for i := range want.Content {
		if d := nodeDiff(path+"/"+want.Content[i].Value, want.Content[i], got.Content[i]); d != "" {
			return d
		}
	}
	return ""
}

func describeNode(n *yaml.Node) string {
	b, _ := json.Marshal(map[string]any{"kind": n.Kind, "tag": n.Tag, "value": n.Value, "line": n.Line, "col": n.Column, "n": len(n.Content)})
	return string(b)
}

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
// else: the answer is the file's bytes (yaml.v3 allocates about six
// times the answer reading it).
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

// An answer with escapes (a model's answer has newlines and quotes) is
// decoded in one allocation of its size, and the responses then hold the
// answer once: neither the file nor encoding/json's scratch copy stays
// alive behind it (as substrings, its keys would keep the file, and
// encoding/json would decode the answer twice).
func TestLargeEscapedResponseFileMemory(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"plain", strings.Repeat("x", 8<<20)},
		{"escapes", strings.Repeat("a \"quoted\" line, <b> & é\t\n", (8<<20)/28)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src, _ := json.Marshal(map[string]any{"ask": []any{tc.text, map[string]any{"text": "short"}}, "other": []any{"two"}})
			if err := os.WriteFile(filepath.Join(dir, "answers.json"), src, 0o600); err != nil {
				t.Fatal(err)
			}
			var before, after, held runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			resp, err := LoadResponsesFile(filepath.Join(dir, "plan.yaml"), "answers.json")
			runtime.ReadMemStats(&after)
			texts := map[string]string{}
			for _, r := range resp {
				texts[r.Label] += r.Text + "|"
			}
			if err != nil || len(resp) != 3 || texts["ask"] != tc.text+"|short|" || texts["other"] != "two|" {
				t.Fatalf("got %d answers, err %v", len(resp), err)
			}
			size := float64(len(tc.text))
			if alloc := float64(after.TotalAlloc - before.TotalAlloc); alloc > float64(len(src))+1.05*size+(1<<20) {
				t.Errorf("loading allocated %.0f bytes, %.2f per byte of the answer; want the file (%d bytes) and at most one copy (%.2f)", alloc, alloc/size, len(src), (float64(len(src))+size)/size)
			}
			runtime.GC()
			runtime.ReadMemStats(&held)
			if live := float64(held.HeapAlloc) - float64(before.HeapAlloc); live > 1.1*size+(1<<20) {
				t.Errorf("the loaded responses hold %.2f bytes per byte of the answer; want it once", live/size)
			}
			runtime.KeepAlive(resp)
		})
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// A plan's board values are values, typed when the plan loads, by the
// rule `runner board put` reads its text with: a mapping is an object
// (board("task:q4").status works), an unquoted 42 a number, a quoted "42"
// text; a quoted string holding JSON is refused by validate.
func TestBoardStepValuesAreTyped(t *testing.T) {
	dir := t.TempDir()
	plan := `version: 1
name: values
vars:
  owner: ann
steps:
  - label: put
    type: board
    op: write
    key: task:q4
    value:
      status: done
      score: 3
      tags: [a, "1", 2]
      owner: ${{ vars.owner }}
      note: "status: ${{ vars.owner }}"
      none: null
  - {label: n, type: board, op: write, key: n, value: 42}
  - {label: s, type: board, op: write, key: s, value: "42"}
  - {label: b, type: board, op: write, key: b, value: true}
  - {label: t, type: board, op: write, key: t, value: ready}
  - {label: show, type: command, run: "echo ${{ board('task:q4').status }}-${{ board('task:q4').score + 1 }}"}
`
	os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(plan), 0o644)
	if r := runCLI(t, dir, "validate", "plan.yaml"); r.code != 0 {
		t.Fatalf("validate: exit %d\n%s", r.code, r.stderr)
	}
	r := runCLI(t, dir, "run", "plan.yaml", "-q")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	bb := blackboardPath(t, r.stdout)
	b, err := board.Load(bb)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"task:q4": map[string]any{"status": "done", "score": 3.0, "tags": []any{"a", "1", 2.0}, "owner": "ann", "note": "status: ann", "none": nil},
		"n":       42.0, "s": "42", "b": true, "t": "ready",
	}
	for k, w := range want {
		e, ok := b.Get(k)
		if !ok {
			t.Errorf("%s: not on the board", k)
			continue
		}
		var got any
		raw, _ := json.Marshal(e.Content)
		json.Unmarshal(raw, &got)
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s = %#v, want %#v", k, got, w)
		}
	}
	for _, s := range b.Steps() {
		if s.Label == "show" && !strings.Contains(string(s.Result), `"stdout":"done-4\n"`) {
			t.Errorf("board('task:q4').status in a later step: %s", s.Result)
		}
	}
	// runner board put reads the same text the same way.
	for _, tc := range []struct {
		text string
		want any
	}{{"42", 42.0}, {"true", true}, {"ready", "ready"}, {`{"status": "done"}`, map[string]any{"status": "done"}}} {
		if r := runCLI(t, dir, "board", bb, "put", "k", tc.text); r.code != 0 {
			t.Fatalf("put %s: exit %d %s", tc.text, r.code, r.stderr)
		}
		b, _ := board.Load(bb)
		e, _ := b.Get("k")
		var got any
		raw, _ := json.Marshal(e.Content)
		json.Unmarshal(raw, &got)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("board put k %s: %#v, want %#v", tc.text, got, tc.want)
		}
	}
	// A quoted JSON string would be text: validate says so, at its line.
	bad := `version: 1
name: bad
steps:
  - {label: put, type: board, op: write, key: task:q4, value: '{"status": "done"}'}
  - {label: put2, type: board, op: write, key: l, value: "[1, 2]"}
`
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(bad), 0o644)
	r = runCLI(t, dir, "validate", "bad.yaml")
	for _, w := range []string{"bad.yaml:4:63: value is a quoted string holding JSON", "to store the object", "bad.yaml:5:58:", "to store the list"} {
		if r.code != exitUsage || !strings.Contains(r.stderr, w) {
			t.Errorf("validate: exit %d, stderr lacks %q:\n%s", r.code, w, r.stderr)
		}
	}
}

package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestBoardCommand(t *testing.T) {
	wd := t.TempDir()
	r := runCLI(t, wd, "run", testdata("loops.yaml"), "-q")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	bb := blackboardPath(t, r.stdout)
	steps := []struct {
		args       []string
		code       int
		out, noout string
	}{
		{[]string{"get", "round"}, 0, "3\n", ""},
		{[]string{"put", "plan", "draft one", "--ttl", "1h"}, 0, "wrote plan (version 1)", ""},
		{[]string{"put", "n", "[1, 2]"}, 0, "wrote n (version 1)", ""},
		{[]string{"get", "plan"}, 0, "draft one\n", ""},
		{[]string{"list"}, 0, "plan", ""},
		{[]string{"delete", "plan"}, 0, "deleted plan (version 2)", ""},
		{[]string{"get", "plan"}, 1, "", ""},
		{[]string{"list"}, 0, "round", "plan "},
		{[]string{"show"}, 0, "| final | 1 | succeeded |", ""},
		{[]string{"frob"}, 2, "", ""},
		{[]string{"get"}, 2, "", ""},
	}
	for _, s := range steps {
		r := runCLI(t, wd, append([]string{"board", bb}, s.args...)...)
		if r.code != s.code || !strings.Contains(r.stdout, s.out) || (s.noout != "" && strings.Contains(r.stdout, s.noout)) {
			t.Errorf("board %v: exit %d, stdout %q, stderr %q", s.args, r.code, r.stdout, r.stderr)
		}
	}
	r = runCLI(t, wd, "board", bb, "snapshot")
	var snap map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &snap); err != nil || snap["round"] != 3.0 || len(snap["n"].([]any)) != 2 {
		t.Errorf("snapshot = %s (%v)", r.stdout, err)
	}
}

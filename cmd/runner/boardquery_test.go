package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// Seed 000's queries on a board, as a user types them: entries filtered by
// section, role, author, label, topic and time (JSON lines), one entry by
// its id, list --json, and seed 001's write/read names for put/get. Bad
// filters are usage errors (exit 2) that say which flag is wrong.
func TestBoardSeedQueries(t *testing.T) {
	wd := t.TempDir()
	bb := filepath.Join(wd, "bb.json")
	if r := runCLI(t, wd, "run", testdata("seed.yaml"), "-q", "--out", bb); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	at := func(s string) string { return "2026-02-04T10:" + s + "Z" }
	// firstID stands for the id of the first write of task:q4, known
	// only once it is written.
	const firstID = "ID-OF-TASK-Q4-V1"
	steps := []struct {
		now  string
		args []string
	}{
		{at("00:00"), []string{"put", "task:q4", `{"status":"pending"}`, "--agent", "orchestrator"}},
		{at("00:01"), []string{"write", "task:q4", `{"status":"in_progress"}`, "--agent", "data_analyst", "--expect-version", "1"}},
		{at("00:02"), []string{"write", "signal:analyst", `{"status":"available"}`, "--agent", "analyst", "--topic", "status"}},
		{at("00:03"), []string{"read", "task:q4"}},
		{at("00:03"), []string{"entries", "--author", "orchestrator"}},
		{at("00:03"), []string{"entries", "--topic", "status"}},
		{at("00:03"), []string{"entries", "--section", "steps", "--label", "prepare"}},
		{at("00:03"), []string{"entries", "--role", "step", "--section", "kv"}},
		{at("00:03"), []string{"entries", "--since", at("00:01"), "--until", at("00:03")}},
		{at("00:03"), []string{"entries", "--since", at("00:00"), "--until", at("00:01")}},
		{at("00:03"), []string{"entries", "--since", "4"}},
		{at("00:03"), []string{"entries", "--author", "nobody"}},
		{at("00:03"), []string{"entries", "--until", "yesterday"}},
		{at("00:03"), []string{"entries", "--since", at("00:02"), "--until", at("00:01")}},
		{at("00:03"), []string{"entries", "extra"}},
		{at("00:03"), []string{"watch", "--since", at("00:01")}},
		{at("00:03"), []string{"entry", firstID}},
		{at("00:03"), []string{"entry", "not-an-id"}},
		{at("00:03"), []string{"entry"}},
		{at("00:03"), []string{"list", "--json"}},
		{at("00:03"), []string{"list", "task:", "--json"}},
		{at("00:03"), []string{"read", "task:q4", "extra"}},
	}
	var out strings.Builder
	for _, s := range steps {
		now, err := time.Parse(time.RFC3339, s.now)
		if err != nil {
			t.Fatal(err)
		}
		args := append([]string{bb}, s.args...)
		for i, a := range args {
			if a == firstID {
				args[i] = entryID(t, bb, "task:q4", 1)
			}
		}
		var so, se strings.Builder
		code := runBoard(args, strings.NewReader(""), &so, &se, func() time.Time { return now })
		fmt.Fprintf(&out, "$ runner board bb.json %s   # at %s\n%s", shellWords(s.args), s.now, so.String())
		if se.Len() > 0 {
			fmt.Fprintf(&out, "stderr: %s", firstLines(se.String(), 1))
		}
		fmt.Fprintf(&out, "[exit %d]\n\n", code)
	}
	golden(t, "board-query.golden", normalizeRun(out.String(), wd))
}

// entryID is the id of version v of key on the board file at path.
func entryID(t *testing.T, path, key string, v int64) string {
	t.Helper()
	b, err := board.LoadForRead(path)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := b.KeyVersion(key, v)
	if !ok {
		t.Fatalf("%s has no version %d of %s", path, v, key)
	}
	return e.ID
}

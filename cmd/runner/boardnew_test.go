package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// Seed 001 without a plan: the first put on a file that does not exist
// makes a board-only file, and every operation works on it (TTLs,
// compare-and-set, conflicts, delete, snapshot, show). A path that looks
// like a mistake (a missing directory, not .json, beside a run's
// blackboard.json) is refused and nothing is made.
func TestBoardStandalone(t *testing.T) {
	wd := t.TempDir()
	os.MkdirAll(filepath.Join(wd, "run1"), 0o700)
	os.WriteFile(filepath.Join(wd, "run1", "blackboard.json"), []byte("{}"), 0o600)
	at := func(s string) string { return "2026-02-04T10:" + s + "Z" }
	steps := []struct {
		now, file string
		args      []string
	}{
		{at("00:00"), "new.json", []string{"get", "task:q4"}},
		{at("00:00"), "new.json", []string{"put", "task:q4", `{"status":"pending"}`, "--agent", "orchestrator", "--ttl", "3600"}},
		{at("00:01"), "new.json", []string{"write", "task:q4", `{"status":"in_progress"}`, "--agent", "data_analyst", "--expect-version", "1"}},
		{at("00:02"), "new.json", []string{"put", "task:q4", `{"status":"lost"}`, "--agent", "orchestrator", "--expect-version", "1"}},
		{at("00:03"), "new.json", []string{"put", "signal:analyst", `{"status":"available"}`, "--ttl", "60", "--agent", "analyst"}},
		{at("00:04"), "new.json", []string{"put", "task:q4", `{"status":"done"}`, "--agent", "orchestrator"}},
		{at("00:04"), "new.json", []string{"put", "task:q4", `{"status":"reviewing"}`, "--agent", "reviewer", "--handoff"}},
		{at("00:04"), "new.json", []string{"delete", "task:q4", "--agent", "reviewer", "--handoff"}},
		{at("00:05"), "new.json", []string{"conflicts"}},
		{at("00:05"), "new.json", []string{"get", "task:q4", "--json"}},
		{at("01:04"), "new.json", []string{"get", "signal:analyst"}},
		{at("01:04"), "new.json", []string{"list"}},
		{at("01:04"), "new.json", []string{"delete", "task:q4"}},
		{at("01:05"), "new.json", []string{"put", "note", "hello"}},
		{at("01:05"), "new.json", []string{"snapshot"}},
		{at("01:05"), "new.json", []string{"show", "--format", "md"}},
		{at("01:06"), "nodir/new.json", []string{"put", "k", "1"}},
		{at("01:06"), "new.txt", []string{"put", "k", "1"}},
		{at("01:06"), "run1/blackbord.json", []string{"put", "k", "1"}},
		{at("01:06"), "other.json", []string{"delete", "k"}},
	}
	var out strings.Builder
	for _, s := range steps {
		now, err := time.Parse(time.RFC3339, s.now)
		if err != nil {
			t.Fatal(err)
		}
		args := append([]string{filepath.Join(wd, s.file)}, s.args...)
		var so, se strings.Builder
		code := runBoard(args, strings.NewReader(""), &so, &se, func() time.Time { return now })
		fmt.Fprintf(&out, "$ runner board %s %s   # at %s\n%s", s.file, shellWords(s.args), s.now, so.String())
		if se.Len() > 0 {
			fmt.Fprintf(&out, "stderr: %s", se.String())
		}
		fmt.Fprintf(&out, "[exit %d]\n\n", code)
	}
	golden(t, "board-new.golden", normalizeRun(out.String(), wd))
	for _, p := range []string{"nodir", "new.txt", "run1/blackbord.json", "other.json"} {
		if _, err := os.Stat(filepath.Join(wd, p)); err == nil {
			t.Errorf("%s was made by a refused command", p)
		}
	}
}

// Many writers starting a board at once: one makes the file, none loses
// its write.
func TestBoardStandaloneConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.json")
	const n = 8
	var wg sync.WaitGroup
	errs := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var so, se strings.Builder
			if code := runBoard([]string{path, "put", fmt.Sprintf("k%d", i), fmt.Sprint(i)}, strings.NewReader(""), &so, &se, nil); code != 0 {
				errs[i] = fmt.Sprintf("writer %d: exit %d: %s", i, code, se.String())
			}
		}(i)
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	b, err := board.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(b.Keys("")); got != n {
		t.Errorf("%d keys on the board, want %d: %v", got, n, b.Keys(""))
	}
	if s := b.Run().Status; s != board.StatusSucceeded {
		t.Errorf("status %q, want %q", s, board.StatusSucceeded)
	}
}

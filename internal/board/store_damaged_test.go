package board

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDamagedSavedRuns: a damaged blackboard.json or journal is an error
// that names the file (and the journal line) and says what is wrong; it
// never drops records silently, and never panics.
func TestDamagedSavedRuns(t *testing.T) {
	setN := func(line, n string) string {
		return regexp.MustCompile(`^\{"n":-?[0-9eE.+]+`).ReplaceAllString(line, `{"n":`+n)
	}
	tests := []struct {
		name string
		// damage changes the file and the journal (one record a line; the
		// file holds records up to 2, the journal records 3 to 8).
		damage func(file string, journal []string) (string, []string)
		want   string // in the error; "" : loads
		where  string // the error names this (file or file:line)
	}{
		{"intact", func(f string, j []string) (string, []string) { return f, j }, "", ""},
		{"absurd record number mid-journal", func(f string, j []string) (string, []string) {
			j[2] = setN(j[2], "999999999")
			return f, j
		}, "journal record number 999999999 follows 4: want 5", "journal:3"},
		{"record number repeated", func(f string, j []string) (string, []string) {
			j[3] = setN(j[3], "5")
			return f, j
		}, "follows 5: want 6", "journal:4"},
		{"record number going back", func(f string, j []string) (string, []string) {
			j[4] = setN(j[4], "1")
			return f, j
		}, "follows 6: want 7", "journal:5"},
		{"record number 0", func(f string, j []string) (string, []string) {
			j[0] = setN(j[0], "0")
			return f, j
		}, "numbered from 1", "journal:1"},
		{"negative record number", func(f string, j []string) (string, []string) {
			j[1] = setN(j[1], "-3")
			return f, j
		}, "numbered from 1", "journal:2"},
		{"record number past int64", func(f string, j []string) (string, []string) {
			j[1] = setN(j[1], "99999999999999999999")
			return f, j
		}, "corrupt journal record", "journal:2"},
		{"records missing before the journal", func(f string, j []string) (string, []string) {
			return f, j[2:]
		}, "records 3 to 4 are missing", "journal:1"},
		{"huge journal_n in the file", func(f string, j []string) (string, []string) {
			return regexp.MustCompile(`"journal_n": \d+`).ReplaceAllString(f, `"journal_n": 9223372036854775807`), j
		}, "journal_n 9223372036854775807, but the file does not hold it: journal_n is wrong", "journal:1"},
		{"journal_n a little too high", func(f string, j []string) (string, []string) {
			return strings.Replace(f, `"journal_n": 2`, `"journal_n": 5`, 1), j
		}, "journal_n 5, but the file does not hold it", "journal:1"},
		{"negative journal_n", func(f string, j []string) (string, []string) {
			return strings.Replace(f, `"journal_n": 2`, `"journal_n": -1`, 1), j
		}, "journal_n -1 is negative", "blackboard.json"},
		{"no run", func(f string, j []string) (string, []string) {
			return regexp.MustCompile(`(?m)^ "run": .*\n`).ReplaceAllString(f, ""), j
		}, `no "run" object: not a saved run`, "blackboard.json"},
		{"run null", func(f string, j []string) (string, []string) {
			return regexp.MustCompile(`(?m)^ "run": .*,\n`).ReplaceAllString(f, ` "run": null,`+"\n"), j
		}, `no "run" object`, "blackboard.json"},
		{"null entry", func(f string, j []string) (string, []string) {
			return `{"format":"runner.blackboard/v1","run":{"id":"r"},"entries":[null],"journal_n":0}`, nil
		}, "entries[0] is null", "blackboard.json"},
		{"step without label", func(f string, j []string) (string, []string) {
			return `{"format":"runner.blackboard/v1","run":{"id":"r"},"steps":[{"visit":1}],"journal_n":0}`, nil
		}, "steps[0] has no label", "blackboard.json"},
		{"syntax error", func(f string, j []string) (string, []string) {
			return strings.Replace(f, `"format": `, `"format" `, 1), j
		}, "line 2, column", "blackboard.json"},
		{"not JSON at all", func(f string, j []string) (string, []string) { return "hello", j }, "not a blackboard file", "blackboard.json"},
		{"empty file", func(f string, j []string) (string, []string) { return "", j }, "not a blackboard file", "blackboard.json"},
		{"garbage journal line", func(f string, j []string) (string, []string) {
			j[1] = "{not json"
			return f, j
		}, "corrupt journal record", "journal:2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := t.TempDir() + "/blackboard.json"
			b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			fill(t, b, 1) // records 1, 2
			if err := b.Save(); err != nil {
				t.Fatal(err)
			}
			fill(t, b, 2) // journal: records 3 to 5
			fill(t, b, 2) // 6 to 8
			b.Close()
			file, _ := os.ReadFile(path)
			journal, _ := os.ReadFile(JournalPath(path))
			lines := strings.Split(strings.TrimSuffix(string(journal), "\n"), "\n")
			if len(lines) != 6 || !strings.Contains(string(file), `"journal_n": 2`) {
				t.Fatalf("setup: %d journal lines, file %s", len(lines), file)
			}
			f2, j2 := tc.damage(string(file), lines)
			os.WriteFile(path, []byte(f2), 0o644)
			if j2 == nil {
				os.Remove(JournalPath(path))
			} else {
				os.WriteFile(JournalPath(path), []byte(strings.Join(j2, "\n")+"\n"), 0o644)
			}
			loaded, err := Load(path)
			if tc.want == "" {
				if err != nil || loaded.Len() != 5 || len(loaded.Steps()) != 3 {
					t.Fatalf("intact run: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("loaded %d entries, %d steps; want an error saying %q", loaded.Len(), len(loaded.Steps()), tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.where) {
				t.Errorf("error %q\nwant it to say %q and name %q", err, tc.want, tc.where)
			}
			if _, err := Open(path, Options{}); err == nil {
				t.Errorf("Open (resume) accepted the damaged run")
			}
		})
	}
}

// A negative TTL (or one that overflowed) is refused, not taken as "keep
// for good".
func TestNegativeTTLRefused(t *testing.T) {
	b := New(Run{ID: "r"})
	if _, err := b.Write(WriteOp{Key: "k", Value: 1, TTL: -time.Second, ExpectVersion: -1}); err == nil || !strings.Contains(err.Error(), "ttl -1s is negative") {
		t.Errorf("Write: err = %v", err)
	}
	err := b.FinishStep(StepRecord{Label: "s", Visit: 1}, Entry{Section: "steps"}, &WriteOp{Key: "k", TTL: -time.Hour, ExpectVersion: -1})
	if err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("FinishStep: err = %v", err)
	}
	if b.Len() != 0 || len(b.Steps()) != 0 {
		t.Errorf("a refused write left %d entries, %d steps", b.Len(), len(b.Steps()))
	}
}

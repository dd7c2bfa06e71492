package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Seed 001's operations, one after another on a finished run, as a
// transcript compared with a golden file. The board commands run in this
// process with a fixed clock, moved forward to check TTL expiry.
func TestBoardSeedOperations(t *testing.T) {
	wd := t.TempDir()
	r := runCLI(t, wd, "run", testdata("seed.yaml"), "-q", "--out", filepath.Join(wd, "bb.json"))
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	at := func(s string) string { return "2026-02-04T10:" + s + "Z" }
	steps := []struct {
		now  string
		args []string
	}{
		{at("00:00"), []string{"put", "task:q4_analysis", `{"status": "pending", "for": "data_analyst", "description": "Q4 revenue"}`, "--agent", "orchestrator", "--ttl", "3600"}},
		{at("00:01"), []string{"put", "task:q4_analysis", `{"status":"in_progress","assigned_to":"data_analyst","started_at":"2026-02-04T10:00:01Z"}`, "--agent", "data_analyst", "--expect-version", "1"}},
		{at("00:02"), []string{"put", "task:q4_analysis", `{"status":"lost"}`, "--agent", "orchestrator", "--expect-version", "1"}},
		{at("00:03"), []string{"put", "signal:analyst", `{"status":"available"}`, "--ttl", "60", "--agent", "analyst"}},
		{at("00:04"), []string{"put", "signal:other", `{"status":"busy"}`, "--agent", "analyst"}},
		{at("00:05"), []string{"put", "note", "plain text", "--ttl", "90s", "--topic", "notes"}},
		{at("00:05"), []string{"get", "note", "--agent", "analyst"}},
		{at("00:05"), []string{"put", "bad", "1", "--ttl", "soon"}},
		{at("00:06"), []string{"get", "task:q4_analysis"}},
		{at("00:06"), []string{"get", "task:q4_analysis", "--json"}},
		{at("00:07"), []string{"get", "nothing"}},
		{at("00:08"), []string{"put", "cache:revenue_summary", `{"revenue": 1300000}`, "--agent", "analyst"}},
		{at("00:09"), []string{"conflicts"}},
		{at("01:02"), []string{"get", "signal:analyst"}},
		{at("01:03"), []string{"get", "signal:analyst"}},
		{at("01:03"), []string{"list"}},
		{at("01:03"), []string{"list", "task:"}},
		{at("01:03"), []string{"snapshot"}},
		{at("01:04"), []string{"delete", "note"}},
		{at("01:04"), []string{"delete", "note"}},
		{at("01:05"), []string{"get", "note"}},
		{at("01:05"), []string{"put", "signal:analyst", `{"status":"busy","current_task":"task:q4_analysis"}`, "--ttl", "2m", "--agent", "analyst"}},
		{at("01:05"), []string{"show", "--format", "md"}},
		{at("01:06"), []string{"lock", "lock:db", "--ttl", "30", "--owner", "job-a"}},
		{at("01:07"), []string{"lock", "lock:db", "--ttl", "30", "--owner", "job-b"}},
		{at("01:08"), []string{"unlock", "lock:db", "--owner", "job-b"}},
		{at("01:20"), []string{"lock", "lock:db", "--ttl", "30", "--owner", "job-a"}},
		{at("01:40"), []string{"lock", "lock:db", "--ttl", "30", "--owner", "job-b"}},
		{at("01:51"), []string{"lock", "lock:db", "--ttl", "30", "--owner", "job-b"}},
		{at("01:52"), []string{"get", "lock:db"}},
		{at("01:53"), []string{"unlock", "lock:db", "--owner", "job-b"}},
		{at("01:53"), []string{"unlock", "lock:db", "--owner", "job-b"}},
		{at("01:54"), []string{"lock", "lock:db"}},
		{at("01:54"), []string{"put", "lock:db", "mine"}},
		{at("01:55"), []string{"lock", "lock:db", "--ttl", "30", "--owner", "job-b"}},
		{at("01:05"), []string{"frob"}},
		{at("01:05"), []string{"get"}},
	}
	var out strings.Builder
	for _, s := range steps {
		now, err := time.Parse(time.RFC3339, s.now)
		if err != nil {
			t.Fatal(err)
		}
		args := append([]string{filepath.Join(wd, "bb.json")}, s.args...)
		var so, se strings.Builder
		code := runBoard(args, strings.NewReader(""), &so, &se, func() time.Time { return now })
		fmt.Fprintf(&out, "$ runner board bb.json %s   # at %s\n%s", shellWords(s.args), s.now, so.String())
		if se.Len() > 0 {
			fmt.Fprintf(&out, "stderr: %s", firstLines(se.String(), 1))
		}
		fmt.Fprintf(&out, "[exit %d]\n\n", code)
	}
	golden(t, "board-seed.golden", normalizeRun(out.String(), wd))
}

// shellWords writes args as a shell would need them.
func shellWords(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if strings.ContainsAny(a, " {}\"'") {
			out[i] = "'" + a + "'"
		}
	}
	return strings.Join(out, " ")
}

func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "")
}

var (
	runIDRe   = regexp.MustCompile(`\b[0-9A-HJKMNP-TV-Z]{26}\b`)
	realTSRe  = regexp.MustCompile(`20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	msCellRe  = regexp.MustCompile(`\| (\d+) \| ([^|]*) \|\n`)
	fakeDayRe = regexp.MustCompile(`^2026-02-04T10:`)
)

// normalizeRun replaces what differs from run to run (ids, the run's real
// times, step durations, the temp dir) so a transcript can be golden.
func normalizeRun(s, wd string) string {
	s = strings.ReplaceAll(s, wd, "WD")
	s = strings.ReplaceAll(s, testdata(""), "TESTDATA")
	s = runIDRe.ReplaceAllString(s, "RUNID")
	s = realTSRe.ReplaceAllStringFunc(s, func(ts string) string {
		if fakeDayRe.MatchString(ts) {
			return ts
		}
		return "TIME"
	})
	return msCellRe.ReplaceAllString(s, "| MS | $2 |\n")
}

// A put on a run no one owns masks the saved plan's secrets in values, as
// the run itself would; a key holding one is refused (stored masked it
// would be another key), without printing it.
func TestBoardPutMasksSecrets(t *testing.T) {
	wd := t.TempDir()
	plan := filepath.Join(wd, "p.yaml")
	os.WriteFile(plan, []byte("version: 1\nname: s\nsecrets: [BOARD_TEST_TOKEN]\nsteps:\n  - {label: a, type: command, run: echo hi}\n"), 0o644)
	env := append(os.Environ(), "BOARD_TEST_TOKEN=tok-9f8e7d6c5b")
	for _, args := range [][]string{
		{"run", plan, "-q", "--out", "bb.json"},
		{"board", "bb.json", "put", "k", "the token is tok-9f8e7d6c5b"},
	} {
		cmd := exec.Command(binary, args...)
		cmd.Dir, cmd.Env = wd, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v %s", args, err, out)
		}
	}
	cmd := exec.Command(binary, "board", "bb.json", "put", "tok-9f8e7d6c5b", "1")
	cmd.Dir, cmd.Env = wd, env
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), `key "***" holds a secret`) || strings.Contains(string(out), "tok-9f8e7d6c5b") {
		t.Errorf("a put whose key holds the secret: %v %s", err, out)
	}
	for _, f := range []string{"bb.json", "bb.json.journal"} {
		data, _ := os.ReadFile(filepath.Join(wd, f))
		if strings.Contains(string(data), "tok-9f8e7d6c5b") {
			t.Errorf("%s holds the secret:\n%s", f, data)
		}
	}
}

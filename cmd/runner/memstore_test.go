package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const memWriterPlan = `version: 1
name: remember
agents:
  scout:
    provider: script
    responses:
      - tool_calls: [{name: memory_write, args: {key: "fact:cache", value: {hit_rate: 0.93}}}]
      - remembered
steps:
  - {label: learn, type: llm, agent: scout, tools: [memory], prompt: "Remember the hit rate."}
`

const memReaderPlan = `version: 1
name: recall
agents:
  analyst:
    provider: script
    responses:
      - tool_calls: [{name: memory_read, args: {key: "fact:cache"}}, {name: memory_list, args: {}}]
      - recalled
steps:
  - {label: recall, type: llm, agent: analyst, tools: [memory], prompt: "What was the hit rate?"}
`

// A memory written by one run is read by another in the same workdir,
// with its provenance; the reader's replay takes the answer from its
// recording, with the store gone; runner memory lists, shows and
// removes it.
func TestMemoryOutlivesARun(t *testing.T) {
	wd := t.TempDir()
	for name, src := range map[string]string{"writer.yaml": memWriterPlan, "reader.yaml": memReaderPlan} {
		if err := os.WriteFile(filepath.Join(wd, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r := runCLI(t, wd, "run", "writer.yaml", "-q", "--out", "w.json"); r.code != 0 {
		t.Fatalf("writer: %d %s", r.code, r.stderr)
	}
	if r := runCLI(t, wd, "run", "reader.yaml", "-q", "--out", "r.json"); r.code != 0 {
		t.Fatalf("reader: %d %s", r.code, r.stderr)
	}
	entries := runCLI(t, wd, "board", "r.json", "entries", "--section", "llm", "--role", "tool")
	for _, want := range []string{`\"hit_rate\":0.93`, `\"agent\":\"scout\"`, `\"label\":\"learn\"`, `\"keys\":[{`} {
		if !strings.Contains(entries.stdout, want) {
			t.Errorf("the reader's tool answers lack %s:\n%s", want, entries.stdout)
		}
	}
	list := runCLI(t, wd, "memory", "list")
	if list.code != 0 || !strings.Contains(list.stdout, "fact:cache") || !strings.Contains(list.stdout, "scout") {
		t.Errorf("memory list: %d %s %s", list.code, list.stdout, list.stderr)
	}
	show := runCLI(t, wd, "memory", "show", "fact:cache")
	if show.code != 0 || !strings.Contains(show.stdout, `"hit_rate": 0.93`) || !strings.Contains(show.stdout, `"run_id"`) {
		t.Errorf("memory show: %d %s %s", show.code, show.stdout, show.stderr)
	}
	// The store gone, the reader's replay still gets what the run saw.
	if err := os.RemoveAll(filepath.Join(wd, ".runner", "memory")); err != nil {
		t.Fatal(err)
	}
	rep := runCLI(t, wd, "replay", "r.json", "--offline")
	if rep.code != 0 || !strings.Contains(rep.stdout+rep.stderr, "matched the recording") {
		t.Fatalf("replay without the store: %d\n%s%s", rep.code, rep.stdout, rep.stderr)
	}
	if _, err := os.Stat(filepath.Join(wd, ".runner", "memory")); err == nil {
		t.Error("the replay opened the store")
	}
	tests := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"memory", "show", "fact:cache"}, 0, "null"},
		{[]string{"memory", "rm", "fact:cache"}, 1, "no memory key"},
		{[]string{"memory", "frob"}, 2, "unknown operation"},
		{[]string{"memory", "--store", "../x", "list"}, 2, "a name is letters"},
	}
	for _, tt := range tests {
		r := runCLI(t, wd, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stdout+r.stderr, tt.out) {
			t.Errorf("%v: %d %s%s, want %d %q", tt.args, r.code, r.stdout, r.stderr, tt.code, tt.out)
		}
	}
	runCLI(t, wd, "run", "writer.yaml", "-q", "--out", "w2.json")
	if r := runCLI(t, wd, "memory", "rm", "fact:cache"); r.code != 0 {
		t.Errorf("rm: %d %s", r.code, r.stderr)
	}
	if r := runCLI(t, wd, "memory", "show", "fact:cache"); strings.TrimSpace(r.stdout) != "null" {
		t.Errorf("after rm: %s", r.stdout)
	}
}

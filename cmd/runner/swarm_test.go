package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// examples/swarm runs offline: the root agent spawns a researcher and a
// critic, each writes its own key, the researcher's write outside its
// keys is refused, the synthesis reads both; and an offline replay
// reproduces the spawns from the recording, with no model. Each
// sub-agent is a visit of its own under the step that spawned it, and a
// replay, a fork (from the spawning step, and from a step after it) and
// a run with --reuse make the same visits.
func TestSwarmExample(t *testing.T) {
	wd := t.TempDir()
	out := filepath.Join(wd, "bb.json")
	r := runCLI(t, wd, "run", filepath.Join(repoRoot(), "examples/swarm/plan.yaml"), "-q", "--out", out)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	b, err := board.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{"research:facts": "researcher", "critique:risks": "critic"}
	for k, author := range keys {
		if e, ok := b.Get(k); !ok || e.Author != author || e.Label != "ask/spawn-"+map[string]string{"researcher": "1", "critic": "2"}[author]+"-"+author {
			t.Errorf("%s: %+v (found %v), want written by %s under its spawn's label", k, e, ok, author)
		}
	}
	var refused, synth bool
	for _, e := range b.Query(board.Filter{Section: "llm"}) {
		s, _ := e.Content.(string)
		if e.Label == "ask/spawn-1-researcher" && strings.Contains(s, `may not write key "critique:risks" (its spawn allows research:*)`) {
			refused = true
		}
		if e.Label == "ask" && e.Role == "tool" && strings.Contains(s, `"key":"critique:risks"`) && strings.Contains(s, `"found":true`) {
			synth = true
		}
	}
	if !refused || !synth {
		t.Errorf("refused write seen by the researcher: %v; synthesis read the critique: %v", refused, synth)
	}
	if e, _ := b.Get("critique:risks"); e.Author != "critic" {
		t.Errorf("critique:risks was overwritten by %s", e.Author)
	}
	want := []string{"ask/spawn-1-researcher<ask researcher succeeded 2 calls", "ask/spawn-2-critic<ask critic succeeded 2 calls"}
	if got := spawnVisits(t, b); !slices.Equal(got, want) {
		t.Fatalf("the sub-agents' visits:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	replayed := filepath.Join(wd, "replayed.json")
	rep := runCLI(t, wd, "replay", out, "--offline", "--out", replayed)
	if rep.code != 0 || !strings.Contains(rep.stdout+rep.stderr, "matched the recording") {
		t.Fatalf("offline replay: exit %d\n%s%s", rep.code, rep.stdout, rep.stderr)
	}
	if !strings.Contains(rep.stdout+rep.stderr, "7 model answers from the recording") {
		t.Errorf("the replay did not answer the sub-agents from the recording:\n%s%s", rep.stdout, rep.stderr)
	}
	if rb, err := board.Load(replayed); err != nil {
		t.Fatal(err)
	} else if got := spawnVisits(t, rb); !slices.Equal(got, want) {
		t.Errorf("the replay's sub-agent visits:\n%s", strings.Join(got, "\n"))
	} else {
		for i, s := range spawnRecords(rb) {
			if w := spawnRecords(b)[i]; !s.StartedAt.Equal(w.StartedAt) || !s.FinishedAt.Equal(w.FinishedAt) {
				t.Errorf("%s replayed at %v-%v, recorded at %v-%v", s.Label, s.StartedAt, s.FinishedAt, w.StartedAt, w.FinishedAt)
			}
		}
	}
	// A fork from the step after the spawns replays them from the
	// recording; from the spawning step it runs it again, live (the
	// script agents answer as they did).
	for _, from := range []string{"show", "ask"} {
		fout := filepath.Join(wd, "fork-"+from+".json")
		r := runCLI(t, wd, "replay", out, "--workdir", wd, "--from", from, "--out", fout)
		if r.code != 0 || !strings.Contains(r.stderr, "went live at "+from) {
			t.Fatalf("fork from %s: exit %d\n%s", from, r.code, r.stderr)
		}
		fb, err := board.Load(fout)
		if err != nil {
			t.Fatal(err)
		}
		if got := spawnVisits(t, fb); !slices.Equal(got, want) {
			t.Errorf("fork from %s: the sub-agents' visits:\n%s", from, strings.Join(got, "\n"))
		}
	}
	reused := filepath.Join(wd, "reused.json")
	ru := runCLI(t, wd, "run", filepath.Join(repoRoot(), "examples/swarm/plan.yaml"), "--reuse", out, "--out", reused)
	if ru.code != 0 || !strings.Contains(ru.stderr, "reused 7 model calls") {
		t.Fatalf("--reuse: exit %d\n%s", ru.code, ru.stderr)
	}
	if rb, err := board.Load(reused); err != nil {
		t.Fatal(err)
	} else if got := spawnVisits(t, rb); !slices.Equal(got, want) {
		t.Errorf("--reuse: the sub-agents' visits:\n%s", strings.Join(got, "\n"))
	}
}

// spawnRecords are a board's sub-agent visits, by label.
func spawnRecords(b *board.Board) []board.StepRecord {
	var out []board.StepRecord
	for _, s := range b.Steps() {
		if s.Spawned() {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, c board.StepRecord) int { return strings.Compare(a.Label, c.Label) })
	return out
}

// spawnVisits describes a board's sub-agent visits: LABEL<PARENT AGENT
// STATUS N calls.
func spawnVisits(t *testing.T, b *board.Board) []string {
	t.Helper()
	var out []string
	for _, s := range spawnRecords(b) {
		var res struct{ Calls int }
		if err := json.Unmarshal(s.Result, &res); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s<%s %s %s %d calls", s.Label, s.Parent, s.Agent, s.Status, res.Calls))
	}
	return out
}

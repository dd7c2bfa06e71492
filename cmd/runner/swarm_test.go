package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// examples/swarm runs offline: the root agent spawns a researcher and a
// critic, each writes its own key, the researcher's write outside its
// keys is refused, the synthesis reads both; and an offline replay
// reproduces the spawns from the recording, with no model.
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
	rep := runCLI(t, wd, "replay", out, "--offline")
	if rep.code != 0 || !strings.Contains(rep.stdout+rep.stderr, "matched the recording") {
		t.Fatalf("offline replay: exit %d\n%s%s", rep.code, rep.stdout, rep.stderr)
	}
	if !strings.Contains(rep.stdout+rep.stderr, "7 model answers from the recording") {
		t.Errorf("the replay did not answer the sub-agents from the recording:\n%s%s", rep.stdout, rep.stderr)
	}
}

package steps

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/agents"
	"github.com/rs/zerolog"
)

// TestLLMEditsEndToEnd: a model behind a fake OpenAI server answers in
// SEARCH/REPLACE blocks. Its first answer is cut off inside a block:
// output: edits re-asks, saying so in the format's terms; the second is
// whole, and apply_diff with format: auto applies it, with a backup.
// A later block that does not apply is refused in SEARCH/REPLACE terms
// and changes nothing.
func TestLLMEditsEndToEnd(t *testing.T) {
	cut := "calc.py\n```python\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\ndef add(a, b):\n    return a +"
	good := "The sign is wrong.\n\ncalc.py\n```python\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\ndef add(a, b):\n    return a + b\n>>>>>>> REPLACE\n```\n"
	bad := "calc.py\n<<<<<<< SEARCH\ndef mul(a, b):\n=======\ndef mul(a, b, c):\n>>>>>>> REPLACE\n"
	f := newLLMOpenAIFake(t, cut, good, bad)
	src := `
version: 1
agents:
  coder: {provider: openai, model: gpt-4o-mini, base_url: "` + f.srv.URL + `/v1"}
steps:
  - {label: fix, type: llm, agent: coder, prompt: "Fix add", output: edits}
  - {label: apply, type: apply_diff, format: auto, diff: "${{ steps.fix.output }}"}
  - {label: again, type: llm, agent: coder, prompt: "Now mul", output: edits}
  - {label: apply2, type: apply_diff, format: auto, diff: "${{ steps.again.output }}", continue_on_error: true}
`
	wd := t.TempDir()
	orig := "def add(a, b):\n    return a - b\n"
	if err := os.WriteFile(filepath.Join(wd, "calc.py"), []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := runPlan(t, wd, src, llmAgents(t, src, agents.Options{}), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.bodies) != 3 {
		t.Fatalf("%d requests, want 3 (the cut answer re-asked once)", len(f.bodies))
	}
	for _, w := range []string{"SEARCH/REPLACE block 1 for calc.py never ends", "cut off", "your edits, complete, in the same format"} {
		if !strings.Contains(f.bodies[1], w) {
			t.Errorf("the re-ask lacks %q:\n%s", w, f.bodies[1])
		}
	}
	got, _ := os.ReadFile(filepath.Join(wd, "calc.py"))
	if string(got) != "def add(a, b):\n    return a + b\n" {
		t.Errorf("calc.py = %q", got)
	}
	apply := llmSaved(t, b, "apply")
	if apply["_status"] != "succeeded" || apply["backup_dir"] == "" {
		t.Errorf("apply = %v", apply)
	}
	apply2 := llmSaved(t, b, "apply2")
	e, _ := apply2["_error"].(string)
	for _, w := range []string{"SEARCH/REPLACE block 1 (line 2 of the answer) for calc.py does not apply", "Its SEARCH lines are not in calc.py", "Send all the blocks again"} {
		if !strings.Contains(e, w) {
			t.Errorf("apply2's error lacks %q:\n%s", w, e)
		}
	}
	if got2, _ := os.ReadFile(filepath.Join(wd, "calc.py")); string(got2) != string(got) {
		t.Errorf("a refused edit changed calc.py: %q", got2)
	}
}

func TestApplyDiffFormatLoadErrors(t *testing.T) {
	for _, tc := range []struct{ step, want string }{
		{`{label: a, type: apply_diff, diff: x, format: aider}`, `format: "aider" is not one of [auto unified search_replace apply_patch whole]`},
		{`{label: a, type: apply_diff, diff: x, format: auto, reverse: true}`, `reverse applies only to unified diffs, and format is auto`},
	} {
		got := llmCompileErr(t, "version: 1\nsteps:\n  - "+tc.step+"\n")
		if !strings.Contains(got, tc.want) {
			t.Errorf("errors:\n%s\nwant %q", got, tc.want)
		}
	}
}

// TestLLMDiffEndedNormally: a model that miscounts its last hunk's header
// or writes `@@ ... @@`, in an answer its provider says ended normally
// (finish_reason stop), gets it applied by its body, first time: no
// re-ask, no refusal at apply_diff. Every other check stays: a hunk whose
// context is not in the file is still refused.
func TestLLMDiffEndedNormally(t *testing.T) {
	const orig = "package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"
	const fixed = "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"
	const head = "--- a/calc.go\n+++ b/calc.go\n"
	const body = " func Add(a, b int) int {\n-\treturn a - b\n+\treturn a + b\n }\n"
	tests := []struct {
		name, answer, output string
		want                 string // calc.go after; "" : apply refused
		wantErr              string
	}{
		{name: "right counts", output: "diff", answer: head + "@@ -3,3 +3,3 @@\n" + body, want: fixed},
		{name: "miscounted last hunk", output: "diff", answer: head + "@@ -3,5 +3,2 @@\n" + body, want: fixed},
		{name: "no counts", output: "diff", answer: "Here is the fix:\n\n" + head + "@@ ... @@\n" + body, want: fixed},
		{name: "bare @@, edits", output: "edits", answer: head + "@@\n" + body, want: fixed},
		{name: "miscounted, edits", output: "edits", answer: head + "@@ -3,9 +3,9 @@\n" + body, want: fixed},
		{name: "context not in the file", output: "diff", answer: head + "@@ ... @@\n func Sub(a, b int) int {\n-\treturn a * b\n+\treturn a + b\n }\n",
			wantErr: "does not apply"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := json.Marshal(tc.answer)
			src := `
version: 1
agents:
  coder: {provider: script, responses: [` + string(a) + `]}
steps:
  - {label: fix, type: llm, agent: coder, prompt: "Fix Add", output: ` + tc.output + `}
  - {label: apply, type: apply_diff, format: auto, diff: "${{ steps.fix.output }}", continue_on_error: true}
`
			wd := t.TempDir()
			if err := os.WriteFile(filepath.Join(wd, "calc.go"), []byte(orig), 0o644); err != nil {
				t.Fatal(err)
			}
			b, err := runPlan(t, wd, src, llmAgents(t, src, agents.Options{}), zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			fix := llmSaved(t, b, "fix")
			if fix["_status"] != "succeeded" || fix["calls"] != 1.0 {
				t.Fatalf("fix = %v", fix)
			}
			apply := llmSaved(t, b, "apply")
			got, _ := os.ReadFile(filepath.Join(wd, "calc.go"))
			if tc.wantErr != "" {
				if e, _ := apply["_error"].(string); !strings.Contains(e, tc.wantErr) || string(got) != orig {
					t.Errorf("apply = %v; calc.go = %q", apply, got)
				}
				return
			}
			if apply["_status"] != "succeeded" || string(got) != tc.want {
				t.Errorf("apply = %v; calc.go = %q", apply, got)
			}
		})
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/replay"
)

// fanOutPlan is a 200-item for_each of command steps, each a little slow,
// then a step reading the results in order.
const fanOutPlan = `version: 1
name: fan-out
limits: {max_steps: 1000}
steps:
  - label: each
    type: command
    for_each: '%s'
    max_concurrency: 4
    run: sleep 0.01; echo "item ${{ item }} at ${{ index }}"
  - label: last
    type: command
    run: echo "${{ steps.each.counts.succeeded }} ${{ steps.each.outputs[199] }}"
`

// fanOutSeqPlan is the same fan-out as a for_each on a sequence: each
// item reads, then a second step reads what its own first step gave.
const fanOutSeqPlan = `version: 1
name: fan-out
limits: {max_steps: 1000}
steps:
  - label: fan
    parallel:
      - label: each
        for_each: '%s'
        max_concurrency: 4
        steps:
          - {label: read, type: command, run: 'sleep 0.01; echo "item ${{ item }}"'}
          - {label: sum, type: command, run: 'echo "${{ steps.read.output }} at ${{ index }}"'}
  - label: last
    type: command
    run: echo "${{ steps.each.counts.succeeded }} ${{ steps.each.outputs[199].sum }}"
`

// A 200-item fan-out killed with SIGKILL in the middle and resumed runs
// only the items that had not finished: every item succeeds exactly once,
// the results stay in input order, an offline replay of the resumed run
// matches, and a replay with a changed item list says where it differs.
// For a for_each step and a for_each sequence (whose items' steps are
// EACH[i]/LABEL).
func TestKillForEachThenResume(t *testing.T) {
	for _, tc := range []struct {
		name, plan string
		perItem    int // records per item
	}{
		{"step", fanOutPlan, 1},
		{"sequence", fanOutSeqPlan, 3},
	} {
		t.Run(tc.name, func(t *testing.T) { killForEachThenResume(t, tc.plan, tc.perItem) })
	}
}

func killForEachThenResume(t *testing.T, fanOutPlan string, perItem int) {
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(fmt.Sprintf(fanOutPlan, "1..200")), 0o644)
	out := filepath.Join(wd, "bb.json")
	cmd := exec.Command(binary, "run", plan, "--out", out, "-q")
	cmd.Dir = wd
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	before := 0
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if b, err := board.Load(out); err == nil {
			if before = len(b.Steps()); before >= 20 {
				break
			}
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed, err := board.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	before = len(killed.Steps())
	if killed.Run().Status != "running" || before < 20 || before >= 200*perItem {
		t.Fatalf("killed with %d records, status %s: not in the middle of the fan-out", before, killed.Run().Status)
	}
	if r := runCLI(t, wd, "resume", out, "-q"); r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	b, err := board.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if b.Run().Status != "succeeded" {
		t.Fatalf("status %s: %s", b.Run().Status, b.Run().Error)
	}
	ran := map[string]int{}
	for _, s := range b.Steps() {
		if s.Parent == "each" && s.Status == "succeeded" {
			ran[s.Label]++
		}
	}
	for i := range 200 {
		if l := fmt.Sprintf("each[%d]", i); ran[l] != 1 {
			t.Errorf("%s succeeded %d times, want once", l, ran[l])
		}
	}
	// The resume ran only what the kill left: no record of a finished item again.
	if got := len(b.Steps()) - before; got > 200*perItem-before+3+4*perItem {
		t.Errorf("the resume made %d records for %d unfinished records", got, 200*perItem-before)
	}
	if perItem > 1 {
		for i := range 200 {
			for _, l := range []string{"read", "sum"} {
				n := 0
				for _, s := range b.Steps() {
					if s.Label == fmt.Sprintf("each[%d]/%s", i, l) && s.Status == "succeeded" {
						n++
					}
				}
				if n != 1 {
					t.Errorf("each[%d]/%s succeeded %d times, want once", i, l, n)
				}
			}
		}
	}
	last := b.Steps()[len(b.Steps())-1]
	if !strings.Contains(string(last.Result), `"output":"200 item 200 at 199"`) {
		t.Errorf("last: %s", last.Result)
	}

	// An offline replay of the killed and resumed run matches.
	rout := filepath.Join(t.TempDir(), "replay.json")
	if r := runCLI(t, t.TempDir(), "replay", out, "--offline", "--out", rout, "-q"); r.code != 0 {
		t.Fatalf("replay: exit %d: %s", r.code, r.stderr)
	}
	// (A replay runs a group's children one after another in the order
	// they finished: the steps of different items of a for_each block,
	// interleaved when recorded, come out item by item; the records are
	// the same.)
	if a, b := stepsSorted(t, withoutResumeMarks(t, normalBoard(t, out))), stepsSorted(t, withoutResumeMarks(t, normalBoard(t, rout))); a != b {
		t.Errorf("the replay's board differs:\n%s", replay.UnifiedDiff("recorded", "replayed", a, b))
	}

	// The same plan over another list diverges at the step, saying how.
	changed := filepath.Join(wd, "changed.yaml")
	os.WriteFile(changed, []byte(fmt.Sprintf(fanOutPlan, "1..199")), 0o644)
	r := runCLI(t, t.TempDir(), "replay", out, "--offline", "--plan", changed, "--out", filepath.Join(t.TempDir(), "r.json"))
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "the item list differs from the recording: recorded 200 items, now 199") {
		t.Errorf("changed list: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// stepsSorted orders a normalised board's step records by label and visit.
func stepsSorted(t *testing.T, normal string) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(normal), &v); err != nil {
		t.Fatal(err)
	}
	steps, _ := v["steps"].([]any)
	key := func(s any) string {
		m := s.(map[string]any)
		return fmt.Sprintf("%s#%09v", m["label"], m["visit"])
	}
	sort.SliceStable(steps, func(i, j int) bool { return key(steps[i]) < key(steps[j]) })
	out, _ := json.MarshalIndent(v, "", " ")
	return string(out)
}

// withoutResumeMarks drops the resume recordings from a normalised board:
// a replay marks the end of a killed part as interrupted (the recording
// ends there) where the killed process left it running, for any plan.
func withoutResumeMarks(t *testing.T, normal string) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(normal), &v); err != nil {
		t.Fatal(err)
	}
	var keep []any
	for _, r := range v["recordings"].([]any) {
		if r.(map[string]any)["kind"] != "resume" {
			keep = append(keep, r)
		}
	}
	v["recordings"] = keep
	out, _ := json.MarshalIndent(v, "", " ")
	return string(out)
}

// files() and read_file() are recorded: a replay gives what the run saw
// even after the files changed or went (offline, and with --workdir in
// an empty directory), and a changed plan that reads another pattern
// stops saying what the recording read there.
func TestWorkspaceFunctionsReplay(t *testing.T) {
	wd := t.TempDir()
	os.MkdirAll(filepath.Join(wd, "src/deep"), 0o755)
	os.WriteFile(filepath.Join(wd, "src/a.go"), []byte("package a"), 0o644)
	os.WriteFile(filepath.Join(wd, "src/deep/b.go"), []byte("package b"), 0o644)
	plan := filepath.Join(wd, "plan.yaml")
	src := `version: 1
steps:
  - label: each
    type: board
    for_each: files("src/**/*.go")
    op: write
    key: "seen/${{ index }}"
    value: "${{ item }}: ${{ read_file(item) }}"
`
	os.WriteFile(plan, []byte(src), 0o644)
	out := filepath.Join(wd, "bb.json")
	if r := runCLI(t, wd, "run", plan, "--out", out, "-q"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	os.RemoveAll(filepath.Join(wd, "src"))
	for _, args := range [][]string{{"--offline"}, {"--workdir", t.TempDir()}} {
		rout := filepath.Join(t.TempDir(), "replay.json")
		if r := runCLI(t, t.TempDir(), append([]string{"replay", out, "--out", rout, "-q"}, args...)...); r.code != 0 {
			t.Fatalf("replay %v: exit %d: %s%s", args, r.code, r.stdout, r.stderr)
		}
		if a, b := normalBoard(t, out), normalBoard(t, rout); a != b {
			t.Errorf("replay %v: the board differs:\n%s", args, replay.UnifiedDiff("recorded", "replayed", a, b))
		}
		if !strings.Contains(normalBoard(t, rout), "src/deep/b.go: package b") {
			t.Errorf("replay %v lost what read_file gave", args)
		}
	}
	changed := filepath.Join(wd, "changed.yaml")
	os.WriteFile(changed, []byte(strings.Replace(src, "src/**/*.go", "src/*.go", 1)), 0o644)
	r := runCLI(t, t.TempDir(), "replay", out, "--offline", "--plan", changed, "--out", filepath.Join(t.TempDir(), "r.json"))
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, `the recording has files("src/**/*.go") here, not files("src/*.go")`) {
		t.Errorf("changed pattern: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// examples/summarize-files fans out over the files it lists, one model
// call per file, and the overview gets the summaries in file order; its
// replays are TestExamplesRunAndReplay's.
func TestSummarizeFilesExample(t *testing.T) {
	wd := t.TempDir()
	r := runCLI(t, wd, "run", filepath.Join(repoRoot(), "examples/summarize-files/plan.yaml"), "-q")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	b, err := board.Load(blackboardPath(t, r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	var prompts, overview string
	for _, s := range b.Steps() {
		if s.Parent == "summarize" {
			prompts += s.Label + " " + strings.SplitN(string(s.Inputs["prompt"]), "\n", 2)[0] + "\n"
		}
		if s.Label == "overview" {
			overview = string(s.Inputs["prompt"])
		}
	}
	for _, want := range []string{"summarize[0] File 1: alpha.md", "summarize[1] File 2: beta.md", "summarize[2] File 3: gamma.md"} {
		if !strings.Contains(prompts, want) {
			t.Errorf("prompts lack %q:\n%s", want, prompts)
		}
	}
	if !strings.Contains(overview, "3 notes, in file order:\nReleases are tagged") || !strings.Contains(overview, "meanwhile.\nThe pager") {
		t.Errorf("overview prompt:\n%s", overview)
	}
}

// --from at an item of a for_each block, or at a step inside one, forks
// there; a label, visit or item the recording never ran is refused up
// front, saying what it has (a fork there would replay to the end and
// never go live).
func TestForkAtItem(t *testing.T) {
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
steps:
  - label: fan
    for_each: '["a", "b", "c"]'
    parallel:
      - {label: up, type: command, run: 'echo ${{ item }}'}
      - label: seq
        steps:
          - {label: r, type: command, run: 'echo ${{ index }}'}
          - {label: s, type: command, run: 'echo ${{ steps.r.output }}${{ item }}'}
  - {label: after, type: command, run: 'echo "${{ steps.fan.outputs[2].seq.s }}"'}
`), 0o644)
	out := filepath.Join(wd, "bb.json")
	if r := runCLI(t, wd, "run", plan, "--out", out, "-q"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	for _, tc := range []struct{ from, want string }{
		{"fan[1]/s", ""},
		{"fan[2]", ""},
		{"nope", `the plan has no step "nope"`},
		{"fan[1]/nope", `the plan has no step "fan[1]/nope"`},
		{"fan[5]", "the recording never ran fan[5]; it has items 0-2 of fan (from 0)"},
		{"fan[7]/up", "the recording never ran fan[7]/up; it has items 0-2 of fan (from 0)"},
		{"fan[1]/s#2", "the recording has no visit 2 of fan[1]/s; it has visit(s) 1"},
		{"fan#3", "the recording has no visit 3 of fan; it has visit(s) 1"},
	} {
		t.Run(tc.from, func(t *testing.T) {
			fout := filepath.Join(t.TempDir(), "fork.json")
			r := runCLI(t, wd, "replay", out, "--workdir", wd, "--from", tc.from, "--out", fout)
			if tc.want == "" {
				if r.code != 0 || !strings.Contains(r.stderr, "went live at "+tc.from) {
					t.Fatalf("exit %d: %s", r.code, r.stderr)
				}
				b, err := board.Load(fout)
				if err != nil {
					t.Fatal(err)
				}
				last := b.Steps()[len(b.Steps())-1]
				if last.Label != "after" || !strings.Contains(string(last.Result), `"output":"2c"`) {
					t.Errorf("the fork's last step: %s %s", last.Label, last.Result)
				}
				return
			}
			// Refused the same way offline (the step before the missing
			// workdir), and with no folder of its own left behind.
			for _, r := range []result{r,
				runCLI(t, wd, "replay", out, "--workdir", wd, "--from", tc.from),
				runCLI(t, wd, "replay", out, "--offline", "--from", tc.from)} {
				if r.code != 2 || !strings.Contains(r.stderr, "runner replay: --from "+tc.from+": "+tc.want) {
					t.Errorf("exit %d, want 2 and %q:\n%s", r.code, tc.want, r.stderr)
				}
			}
		})
	}
	// A fork refused once its folder is made (an agent the plan lacks)
	// takes the folder away again.
	if r := runCLI(t, wd, "replay", out, "--workdir", wd, "--from", "fan[2]", "--agent", "nobody.model=m"); r.code != 2 ||
		!strings.Contains(r.stderr, `the plan has no agent "nobody"`) {
		t.Errorf("--agent nobody: exit %d: %s", r.code, r.stderr)
	}
	if left, _ := os.ReadDir(filepath.Join(wd, ".runner", "runs")); len(left) > 0 {
		t.Errorf("refused forks left %d folders under .runner/runs", len(left))
	}
}

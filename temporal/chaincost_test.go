package temporal

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/steps"
	"go.temporal.io/sdk/testsuite"
)

// countingStore counts the blobs a worker reads.
type countingStore struct {
	Store
	gets atomic.Int64
}

func (s *countingStore) Get(name string) ([]byte, error) {
	s.gets.Add(1)
	return s.Store.Get(name)
}

// A step reads only the chunks added since the step before it, even when
// that step wrote to the board on this worker (every command step does:
// its output is an entry). Before, a step that wrote marked the worker's
// copy of the run stale, and the next step rebuilt it from the whole
// chain: a run of n steps read about n²/2 chunks, and a long run on
// Temporal cost more per step the longer it had run.
func TestWorkerReadsOnlyNewChunks(t *testing.T) {
	for _, tc := range []struct {
		name string
		step string
	}{
		{"command", `max_concurrency: 1, type: command, run: "echo ${{ index }} ${{ steps.first.output }}"`},
		{"board write", `max_concurrency: 1, type: board, op: write, key: "k${{ index }}", value: "${{ index }}"`},
		{"loop of commands", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads := map[int]int64{}
			for _, n := range []int{20, 80} {
				reads[n] = chunkReads(t, tc.step, n)
				t.Logf("%d steps: %d blobs read", n, reads[n])
			}
			// n steps need about n chunk reads (one per step, plus the
			// plan and the run's start); n²/2 would be 200 and 3,200.
			for n, got := range reads {
				if got > int64(3*n) {
					t.Errorf("%d steps: the worker read %d blobs, want at most %d (3 a step)", n, got, 3*n)
				}
			}
		})
	}
}

// chunkReads runs n sequential steps in the SDK's test environment and
// returns how many blobs the worker read.
func chunkReads(t *testing.T, step string, n int) int64 {
	t.Helper()
	var src strings.Builder
	// Each step reads the board (steps.first), so the workflow hands
	// every activity a new head.
	src.WriteString("version: 1\nname: chain\nsteps:\n  - {label: first, type: command, run: \"echo first\"}\n")
	if step == "" { // a loop back with goto, as seeds' code→test loops do
		fmt.Fprintf(&src, `  - {label: s, type: command, run: "echo ${{ steps.first.output }}", max_visits: %d}
  - label: again
    type: branch
    max_visits: %d
    cases:
      - {when: "steps.s.visits < %d", goto: s}
`, n, n, n)
	} else {
		fmt.Fprintf(&src, "  - label: each\n    for_each: '0..%d'\n    %s\n", n-1, strings.ReplaceAll(strings.Trim(step, "{}"), ", ", "\n    "))
	}
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	dir := DirStore{Dir: t.TempDir()}
	store := &countingStore{Store: dir}
	Register(env, &Workflow{Store: dir}, &Activities{Store: store})
	env.SetTestTimeout(5 * time.Minute)
	env.SetWorkerOptions(workerOptions)
	env.ExecuteWorkflow(WorkflowName, Input{Run: newRun(t, src.String(), t.TempDir()), Options: Options{}})
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	var out Output
	if err := envOutput(env, &out); err != nil {
		t.Fatalf("workflow error: %v\n%s", err, src.String())
	}
	if out.Status != "succeeded" {
		t.Fatalf("run %s\n%s", out.Status, src.String())
	}
	return store.gets.Load()
}

// Items of a for_each start in one order and reach a worker in another:
// an item handed an earlier head than the worker's copy of the run is at
// runs on that copy (it sees what siblings finished since, as an item in
// one process does), without reading the chain again. A step not beside
// others (Beside false) is never served a later board.
func TestStaleHeadBesideSiblingsReadsNothing(t *testing.T) {
	const src = `
version: 1
name: fan
steps:
  - {label: first, type: command, run: "echo first"}
  - {label: each, type: command, for_each: '0..2', max_concurrency: 3, run: "echo ${{ item }}"}
`
	prog, err := engine.Compile("plan.yaml", []byte(src), steps.Registry())
	if err != nil {
		t.Fatal(err)
	}
	dir := DirStore{Dir: t.TempDir()}
	store := &countingStore{Store: dir}
	run := newRun(t, src, t.TempDir())
	// The chain: the run, then first's record, then each[0]'s.
	var heads []string
	prev := ""
	for _, c := range []*chunk{
		{Run: &run},
		{Steps: []board.StepRecord{{Label: "first", Visit: 1, Type: "command", Status: "succeeded", Result: json.RawMessage(`{"output":"first"}`)}}},
		{Steps: []board.StepRecord{{Label: "each[0]", Parent: "each", Visit: 1, Type: "command", Status: "succeeded", Result: json.RawMessage(`{"output":"0"}`)}}},
	} {
		c.Prev = prev
		name, err := putChunk(dir, c)
		if err != nil {
			t.Fatal(err)
		}
		heads, prev = append(heads, name), name
	}
	a := &Activities{Store: store}
	in := func(head string, beside bool) StepInput {
		return StepInput{PlanPath: "plan.yaml", PlanSHA256: prog.Plan.SHA256, Head: head, Label: "each[1]", Visit: 1, Attempt: 1,
			Workdir: run.Workdir, Beside: beside}
	}
	r, err := a.state("wf", prog, in(heads[2], true))
	if err != nil {
		t.Fatal(err)
	}
	if got := store.gets.Load(); got != 3 {
		t.Fatalf("the first step read %d chunks, want the chain's 3", got)
	}
	if !hasStep(r.Board, "each[0]") {
		t.Fatal("the worker's copy lacks each[0], which its head holds")
	}
	r2, err := a.state("wf", prog, in(heads[1], true))
	if err != nil {
		t.Fatal(err)
	}
	if got := store.gets.Load(); got != 3 || r2 != r {
		t.Errorf("an item handed the earlier head %s beside its siblings read %d more chunks (new copy: %v), want none", heads[1][:8], got-3, r2 != r)
	}
	r3, err := a.state("wf", prog, in(heads[1], false))
	if err != nil {
		t.Fatal(err)
	}
	if hasStep(r3.Board, "each[0]") {
		t.Error("a step alone, handed the head before each[0], sees each[0]")
	}
}

func hasStep(b *board.Board, label string) bool {
	for _, s := range b.Steps() {
		if s.Label == label {
			return true
		}
	}
	return false
}

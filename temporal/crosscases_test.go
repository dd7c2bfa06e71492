package temporal

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/steps"
	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
)

// The cases where the engines drifted apart before one interpreter drove
// both: each engine's run must say what the contract says (SPEC, README:
// a step stopped by fail_fast or Ctrl-C is canceled, not failed), and the
// two runs must be the same record for record.
func TestCrossEngineCases(t *testing.T) {
	tests := []struct {
		name, src, status, steps, output string
	}{
		{"fail_fast cancels the running sibling and keeps the next from starting", `
version: 1
steps:
  - label: group
    max_concurrency: 2
    parallel:
      - {label: slow, type: command, run: "sleep 30"}
      - {label: bad, type: command, run: "sleep 0.5; exit 1"}
      - {label: later, type: command, run: "echo never"}
  - {label: never, type: command, run: "echo never"}
`, "failed", "bad:failed group:failed later:canceled slow:canceled", ""},
		{"max_concurrency starts the children in plan order", `
version: 1
steps:
  - label: group
    max_concurrency: 1
    parallel:
      - {label: a, type: command, run: "echo a >> order"}
      - {label: b, type: command, run: "echo b >> order"}
      - {label: c, type: command, run: "echo c >> order"}
      - {label: d, type: command, run: "echo d >> order"}
      - {label: e, type: command, run: "echo e >> order"}
  - {label: seen, type: command, run: "tr -d '\\n' < order"}
`, "succeeded", "a:succeeded b:succeeded c:succeeded d:succeeded e:succeeded group:succeeded seen:succeeded", "abcde"},
		{"for_each runs its items as children, in order, results in input order", `
version: 1
steps:
  - {label: list, type: board, op: write, key: names, value: "${{ split('x,y,z,w', ',') }}"}
  - label: each
    type: command
    for_each: 'board("names")'
    max_concurrency: 2
    run: "echo ${{ index }}${{ item }} >> order; echo ${{ item }}"
  - {label: pure, type: board, for_each: 'steps.each.outputs', op: write, key: "seen/${{ index }}", value: "${{ item }}"}
  - {label: seen, type: command, run: "echo ${{ join(steps.each.outputs, '') }}${{ steps.pure.counts.succeeded }}"}
`, "succeeded", "each:succeeded each[0]:succeeded each[1]:succeeded each[2]:succeeded each[3]:succeeded list:succeeded " +
			"pure:succeeded pure[0]:succeeded pure[1]:succeeded pure[2]:succeeded pure[3]:succeeded seen:succeeded", "xyzw4"},
		{"files() and read_file() give a for_each its list and its items' text", `
version: 1
steps:
  - {label: make, type: command, run: "mkdir -p in/sub && echo A > in/a.txt && echo B > in/sub/b.txt"}
  - {label: each, type: board, for_each: 'files("in/**/*.txt")', op: write, key: "f/${{ index }}", value: "${{ item }}:${{ trim(read_file(item)) }}"}
  - {label: seen, type: command, run: "echo ${{ join(steps.each.outputs, ',') }}"}
`, "succeeded", "each:succeeded each[0]:succeeded each[1]:succeeded make:succeeded seen:succeeded", "in/a.txt:A,in/sub/b.txt:B"},
		{"a sequence in a group runs in order, its branch looping within it", `
version: 1
steps:
  - label: group
    parallel:
      - label: seq
        steps:
          - {label: read, type: command, run: "echo r >> log; wc -l < log | tr -d ' '"}
          - label: again
            type: branch
            cases:
              - {when: 'steps.read.output != "3"', goto: read}
          - {label: use, type: command, run: "echo used${{ steps.read.output }}"}
      - {label: other, type: command, run: "echo o"}
  - {label: seen, type: command, run: "echo ${{ steps.use.output }}"}
`, "succeeded", "again:succeeded again:succeeded again:succeeded group:succeeded other:succeeded read:succeeded read:succeeded read:succeeded seen:succeeded seq:succeeded use:succeeded", "used3"},
		{"needs: a DAG in a group, a failed need skipping its dependant", `
version: 1
steps:
  - label: group
    fail_fast: false
    parallel:
      - {label: report, type: command, needs: [build, lint], run: "echo ${{ steps.build.output }}${{ steps.lint.output }}"}
      - {label: build, type: command, run: "sleep 0.2; echo b"}
      - {label: lint, type: command, needs: build, run: "echo l"}
      - {label: bad, type: command, run: "exit 1"}
      - {label: after_bad, type: command, needs: [bad], run: "echo never"}
`, "failed", "after_bad:skipped bad:failed build:succeeded group:failed lint:succeeded report:succeeded", ""},
		{"a sub-plan call and a for_each of calls: callee steps under CALL/LABEL, typed outputs", `
version: 1
steps:
  - {label: one, type: plan, plan: testdata/callee.yaml, vars: {pkg: solo, n: 2}}
  - label: many
    type: plan
    plan: testdata/callee.yaml
    for_each: '["a", "b", "c"]'
    max_concurrency: 2
    vars: {pkg: "${{ item }}", n: "${{ index }}"}
  - {label: seen, type: command, run: "echo ${{ steps.one.outputs.verdict }}/${{ steps.one.outputs.n }}/${{ steps.many.outputs[2].verdict }}/${{ steps.many.counts.succeeded }}"}
`, "succeeded", "many:succeeded many[0]/build:succeeded many[0]/decide:succeeded many[0]/vet:succeeded many[0]:succeeded " +
			"many[1]/build:succeeded many[1]/decide:succeeded many[1]/vet:succeeded many[1]:succeeded " +
			"many[2]/build:succeeded many[2]/decide:succeeded many[2]/vet:succeeded many[2]:succeeded " +
			"one/build:succeeded one/decide:succeeded one/vet:succeeded one:succeeded seen:succeeded", "vetted solo 2/3/vetted c 2/3"},
		{"a failing callee step fails its call and the run", `
version: 1
steps:
  - {label: one, type: plan, plan: testdata/failing.yaml}
  - {label: never, type: command, run: "echo never"}
`, "failed", "one/bad:failed one/ok:succeeded one:failed", ""},
		{"for_each on a sequence: each item runs its steps as ITEM/LABEL, a branch looping within the item", `
version: 1
steps:
  - label: group
    parallel:
      - label: seq
        for_each: '["a", "b"]'
        max_concurrency: 1
        steps:
          - {label: read, type: command, run: "echo ${{ item }} >> log_${{ item }}; wc -l < log_${{ item }} | tr -d ' '"}
          - label: again
            type: branch
            cases:
              - {when: 'steps.read.output != "2"', goto: read}
          - {label: use, type: command, run: "echo ${{ item }}${{ index }}${{ steps.read.output }}"}
      - {label: other, type: command, run: "echo o"}
  - {label: seen, type: command, run: "echo ${{ steps.seq.outputs[0].use }}${{ steps.seq.outputs[1].use }}"}
`, "succeeded", "group:succeeded other:succeeded seen:succeeded seq:succeeded " +
			"seq[0]/again:succeeded seq[0]/again:succeeded seq[0]/read:succeeded seq[0]/read:succeeded seq[0]/use:succeeded seq[0]:succeeded " +
			"seq[1]/again:succeeded seq[1]/again:succeeded seq[1]/read:succeeded seq[1]/read:succeeded seq[1]/use:succeeded seq[1]:succeeded", "a02b12"},
		{"for_each on a group: a failed item cancels the items not started", `
version: 1
steps:
  - label: fan
    for_each: '[0, 1, 2]'
    max_concurrency: 1
    parallel:
      - {label: ok, type: board, op: write, key: "k/${{ index }}", value: "${{ item }}"}
      - {label: check, type: command, needs: [ok], run: "exit ${{ 1 - index }}"}
  - {label: never, type: command, run: "echo never"}
`, "failed", "fan:failed fan[0]/check:failed fan[0]/ok:succeeded fan[0]:failed fan[1]:canceled fan[2]:canceled", ""},
		{"an agent with memory: conversation sends its earlier turns on each visit", `
version: 1
agents:
  bot: {provider: script, memory: conversation, responses: ["done 1", "done 2", "done 3", "summed"]}
steps:
  - {label: work, type: llm, agent: bot, prompt: "Try ${{ steps.work.visits + 1 }}"}
  - label: again
    type: branch
    cases:
      - {when: steps.work.visits < 3, goto: work}
  - {label: sum, type: llm, agent: bot, prompt: "Sum up"}
  - {label: seen, type: command, run: "echo ${{ steps.sum.output }}${{ steps.sum.usage.input_tokens }}"}
`, "succeeded", "again:succeeded again:succeeded again:succeeded seen:succeeded sum:succeeded work:succeeded work:succeeded work:succeeded", "summed10"},
		{"a failed item cancels the items not started", `
version: 1
steps:
  - label: each
    type: command
    for_each: '[0, 1, 2]'
    max_concurrency: 1
    run: "exit ${{ 1 - index }}"
  - {label: never, type: command, run: "echo never"}
`, "failed", "each:failed each[0]:failed each[1]:canceled each[2]:canceled", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, _ := inProcess(t, tt.src)
			got, out, err := runOnSuite(t, tt.src)
			if err != nil {
				t.Fatal(err)
			}
			for name, b := range map[string]*board.Board{"in process": want, "on Temporal": got} {
				if b.Run().Status != tt.status {
					t.Errorf("%s: run %s %q, want %s", name, b.Run().Status, b.Run().Error, tt.status)
				}
				if s := sortedSummary(b); s != tt.steps {
					t.Errorf("%s: steps %s, want %s", name, s, tt.steps)
				}
				if tt.output != "" {
					if rec := lastRecord(b, "seen"); !strings.Contains(string(rec.Result), `"output":"`+tt.output+`"`) {
						t.Errorf("%s: seen %s, want output %s", name, rec.Result, tt.output)
					}
				}
			}
			if out.Status != want.Run().Status || out.Error != want.Run().Error {
				t.Errorf("run: in process %s %q, on Temporal %s %q", want.Run().Status, want.Run().Error, out.Status, out.Error)
			}
			if d := sameCross(want, got); d != "" {
				t.Errorf("the boards differ: %s", d)
			}
		})
	}
}

// sortedSummary is runSummary in label order: which sibling a group's
// record comes after is a race.
func sortedSummary(b *board.Board) string {
	list := strings.Fields(runSummary(b))
	sort.Strings(list)
	return strings.Join(list, " ")
}

func lastRecord(b *board.Board, label string) board.StepRecord {
	var rec board.StepRecord
	for _, s := range b.Steps() {
		if s.Label == label {
			rec = s
		}
	}
	return rec
}

// A stop (Ctrl-C in process, the workflow canceled on Temporal) during a
// step: the step is canceled, the run interrupted, on both engines.
func TestCrossEngineStop(t *testing.T) {
	src := `
version: 1
steps:
  - {label: first, type: command, run: "echo one"}
  - {label: slow, type: command, run: "echo started > started; sleep 30"}
  - {label: never, type: command, run: "echo never"}
`
	// In process: the interrupt comes once the slow step has started.
	dir := t.TempDir()
	run := newRun(t, src, dir)
	prog, _ := engine.Compile("plan.yaml", []byte(src), steps.Registry())
	want := board.New(run)
	ctx, stop := context.WithCancelCause(context.Background())
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
				stop(engine.ErrInterrupted)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	r := &engine.Runner{Prog: prog, Board: want, Log: zerolog.Nop(), Workdir: dir, Vars: run.Vars}
	r.Run(ctx)

	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	store := DirStore{Dir: settledDir(t)}
	Register(env, &Workflow{Store: store}, &Activities{Store: store})
	env.SetTestTimeout(2 * time.Minute)
	env.SetWorkerOptions(workerOptions)
	started := 0
	env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) {
		if started++; started == 2 {
			env.RegisterDelayedCallback(env.CancelWorkflow, time.Millisecond)
		}
	})
	env.ExecuteWorkflow(WorkflowName, Input{Run: newRun(t, src, settledDir(t))})
	var out Output
	if err := envOutput(env, &out); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	got, err := LoadBoard(store, out.Head)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*board.Board{"in process": want, "on Temporal": got} {
		if b.Run().Status != "interrupted" || b.Run().Error != "step slow: interrupted" {
			t.Errorf("%s: run %s %q, want interrupted %q", name, b.Run().Status, b.Run().Error, "step slow: interrupted")
		}
		if s := runSummary(b); s != "first:succeeded slow:canceled" {
			t.Errorf("%s: steps %s", name, s)
		}
		if rec := lastRecord(b, "slow"); rec.Error != "interrupted" {
			t.Errorf("%s: slow's error %q, want interrupted", name, rec.Error)
		}
	}
}

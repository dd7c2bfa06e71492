package temporal

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// runParts runs src on the test suite under opt, following each
// continue-as-new into the next part, and returns the final board, the
// output and the number of parts.
func runParts(t *testing.T, src string, opt Options) (*board.Board, *Output, int) {
	t.Helper()
	store := DirStore{Dir: t.TempDir()}
	in := Input{Run: newRun(t, src, t.TempDir()), Options: opt}
	for part := 1; ; part++ {
		if part > 100 {
			t.Fatal("the run did not end in 100 parts")
		}
		var s testsuite.WorkflowTestSuite
		s.SetLogger(quietLogger())
		env := s.NewTestWorkflowEnvironment()
		Register(env, &Workflow{Store: store}, &Activities{Store: store})
		env.SetWorkerOptions(workerOptions)
		env.SetTestTimeout(2 * time.Minute)
		// The suite keeps no history: each activity makes it look longer
		// by what one adds on a server.
		events := 3
		env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) {
			events += eventsPerStep
			env.SetCurrentHistoryLength(events)
		})
		env.ExecuteWorkflow(WorkflowName, in)
		var can *workflow.ContinueAsNewError
		if err := env.GetWorkflowError(); errors.As(err, &can) {
			in = Input{}
			if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var out Output
		if err := envOutput(env, &out); err != nil {
			t.Fatal(err)
		}
		b, err := LoadBoard(store, out.Head)
		if err != nil {
			t.Fatal(err)
		}
		return b, &out, part
	}
}

// A for_each whose items would pass --max-history-events continues as new
// between items (fanout.go): every part stays near the bound, and the run
// ends with the records, entries, statuses and results in input order of
// the same plan run in one process. With a bound of 300 events (about 50
// command items a part) a 200-item fan-out crosses it several times.
func TestCrossEngineFanOutAcrossParts(t *testing.T) {
	tests := []struct {
		name, src, status string
		minParts          int
		check             func(t *testing.T, b *board.Board)
	}{
		{"200 command items, results in input order", `
version: 1
steps:
  - label: each
    type: command
    for_each: '0..199'
    max_concurrency: 7
    run: "echo ${{ item * 2 }}"
  - {label: seen, type: command, run: "echo ${{ len(steps.each.outputs) }} ${{ steps.each.outputs[0] }} ${{ steps.each.outputs[199] }} ${{ steps.each.counts.succeeded }}"}
`, "succeeded", 3, func(t *testing.T, b *board.Board) {
			if rec := lastRecord(b, "seen"); !strings.Contains(string(rec.Result), `"output":"200 0 398 200"`) {
				t.Errorf("seen: %s", rec.Result)
			}
		}},
		{"no max_concurrency: the bound still holds the items of a part", `
version: 1
steps:
  - {label: each, type: command, for_each: '0..199', run: "echo ${{ item }}"}
  - {label: seen, type: command, run: "echo ${{ join(map(steps.each.outputs, string(#)), ',') == join(map(0..199, string(#)), ',') }}"}
`, "succeeded", 3, func(t *testing.T, b *board.Board) {
			if rec := lastRecord(b, "seen"); !strings.Contains(string(rec.Result), `"output":"true"`) {
				t.Errorf("seen: %s", rec.Result)
			}
		}},
		{"fail_fast: an item that fails keeps the later items from starting, across parts", `
version: 1
steps:
  - label: each
    type: command
    for_each: '0..199'
    max_concurrency: 1
    fail_fast: true
    run: "exit ${{ item == 120 ? 1 : 0 }}"
  - {label: never, type: command, run: "echo never"}
`, "failed", 2, func(t *testing.T, b *board.Board) {
			rec := lastRecord(b, "each")
			if !strings.Contains(string(rec.Result), `"canceled":79`) || !strings.Contains(string(rec.Result), `"failed":1`) {
				t.Errorf("each: %s", rec.Result)
			}
		}},
		{"failures without fail_fast are counted across parts", `
version: 1
steps:
  - label: each
    type: command
    for_each: '0..149'
    max_concurrency: 4
    continue_on_error: true
    fail_fast: false
    run: "exit ${{ int(item) % 50 == 7 ? 1 : 0 }}"
  - {label: seen, type: command, run: "echo ${{ steps.each.counts.failed }} ${{ steps.each.status }}"}
`, "succeeded", 2, func(t *testing.T, b *board.Board) {
			if rec := lastRecord(b, "seen"); !strings.Contains(string(rec.Result), `"output":"3 failed"`) {
				t.Errorf("seen: %s", rec.Result)
			}
		}},
		{"a for_each over a sequence with board writes, inside a group", `
version: 1
limits: {max_steps: 1000}
steps:
  - label: outer
    parallel:
      - {label: side, type: command, run: "echo side"}
      - label: each
        for_each: '0..79'
        max_concurrency: 5
        steps:
          - {label: cmd, type: command, run: "echo ${{ item }}"}
          - {label: put, type: board, op: write, key: "k/${{ index }}", value: "${{ steps.cmd.stdout }}"}
  - {label: seen, type: command, run: "echo ${{ len(steps.outer.output.each) }} ${{ board('k/79') }}"}
`, "succeeded", 2, func(t *testing.T, b *board.Board) {
			if rec := lastRecord(b, "seen"); !strings.Contains(string(rec.Result), `"output":"80 79`) {
				t.Errorf("seen: %s", rec.Result)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, _ := inProcess(t, tt.src)
			got, out, parts := runParts(t, tt.src, Options{MaxHistoryEvents: 300})
			if parts < tt.minParts {
				t.Errorf("the run took %d parts, want at least %d (the bound was not crossed)", parts, tt.minParts)
			}
			for name, b := range map[string]*board.Board{"in process": want, "on Temporal": got} {
				if b.Run().Status != tt.status {
					t.Errorf("%s: run %s %q, want %s", name, b.Run().Status, b.Run().Error, tt.status)
				}
				tt.check(t, b)
			}
			if out.Status != want.Run().Status || out.Error != want.Run().Error {
				t.Errorf("run: in process %s %q, on Temporal %s %q", want.Run().Status, want.Run().Error, out.Status, out.Error)
			}
			if d := sameCross(want, got); d != "" {
				t.Errorf("the boards differ: %s", d)
			}
			t.Logf("%d parts", parts)
		})
	}
}

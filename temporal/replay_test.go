package temporal

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/liveboard"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

var recordHistories = flag.Bool("record-histories", false, "run the history plans on a dev server and save their histories in testdata/histories")

// historyPlans are recorded once (go test -run TestReplayHistories
// -record-histories) and replayed by every test run: a change to the
// workflow that would break a run in flight (a step scheduled in another
// order, a timer more or less) fails TestReplayHistories.
var historyPlans = map[string]string{
	"control-flow": `
version: 1
vars: {rounds: 3, go: false}
steps:
  - {label: hello, type: command, run: "echo hello"}
  - {label: maybe, type: command, run: "echo ran", if: vars.go}
  - {label: put, type: board, op: write, key: greeting, value: "${{ steps.hello.stdout }}"}
  - {label: work, type: command, run: "echo round ${{ steps.work.visits + 1 }}"}
  - label: again
    type: branch
    cases:
      - {when: steps.work.visits < vars.rounds, goto: work}
    default: checks
  - {label: skipped, type: command, run: "echo never"}
  - label: checks
    max_concurrency: 2
    parallel:
      - {label: a, type: command, run: "echo a"}
      - {label: b, type: command, run: "echo b"}
      - {label: c, type: board, op: read, key: greeting}
  - {label: last, type: command, run: "echo ${{ steps.checks.output.a }} ${{ board('greeting') }}"}
`,
	"retries": `
version: 1
steps:
  - label: flaky
    type: command
    run: 'n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; echo $n; test $n -ge 3'
    retry: {max: 4, backoff: 100ms}
  - label: poll
    type: command
    run: 'n=$(cat polls 2>/dev/null || echo 0); n=$((n+1)); echo $n > polls; echo $n'
    retry: {max: 4, backoff: 100ms, until: 'step.stdout == "2\n"'}
  - {label: slow, type: command, run: "sleep 5", timeout: 200ms, continue_on_error: true}
`,
	"fail-fast": `
version: 1
steps:
  - label: group
    max_concurrency: 2
    parallel:
      - {label: slow, type: command, run: "sleep 10"}
      - {label: bad, type: command, run: "sleep 0.3; exit 1"}
      - {label: later, type: command, run: "echo never"}
  - {label: never, type: command, run: "echo never"}
`,
	// Branches on a secret: recorded with DEPLOY_TOKEN set to
	// recordedSecret, replayed with it unset and set otherwise
	// (TestReplaySecretsHistoryInAnyEnvironment).
	"secrets": secretsPlan,
	// Updates while the run waits at an input: an outside write, refused
	// answers, the answer.
	"live": `
version: 1
steps:
  - {label: seed, type: board, op: write, key: "jobs:next", value: build}
  - label: review
    type: input
    prompt: "Deploy ${{ board('jobs:next') }}?"
    timeout: 1h
    form: {properties: {approve: {type: boolean}}, required: [approve]}
    default: {approve: false}
  - {label: deploy, type: command, run: "echo ${{ board('jobs:next') }} ${{ steps.review.output.approve }}"}
`,
	// A group's children and a block for_each's items spread over the
	// pool, each merged back in order, beside a group that stays.
	"spread-groups": `
version: 1
steps:
  - label: grp
    parallel:
      - {label: a, type: command, run: "echo a > a.txt; echo a > same.txt"}
      - {label: b, type: command, run: "echo b > b.txt; echo b > same.txt"}
      - label: each
        for_each: '0..1'
        steps:
          - {label: w, type: command, run: "echo ${{ item }} > w${{ item }}.txt"}
          - {label: r, type: command, run: "cat w${{ item }}.txt"}
  - label: needing
    parallel:
      - {label: c, type: command, run: "echo c > c.txt"}
      - {label: d, type: command, needs: [c], run: "cat c.txt"}
  - {label: read, type: command, run: "cat a.txt b.txt same.txt w0.txt w1.txt"}
`,
	// A for_each longer than the history bound (historyOptions).
	"fan-out": `
version: 1
steps:
  - {label: each, type: command, for_each: '0..59', max_concurrency: 4, run: "echo ${{ item }}"}
  - {label: seen, type: command, run: "echo ${{ len(steps.each.outputs) }}"}
`,
}

// historyOptions are the options a history plan is recorded with.
var historyOptions = map[string]Options{
	// A bound of 200 events: the for_each passes it between items, and
	// the run continues as new there (fanout.go).
	"fan-out": {MaxHistoryEvents: 200},
}

// drive makes the updates of the "live" history once the run waits.
func drive(t *testing.T, c client.Client, id string) {
	ctx := context.Background()
	for {
		v, err := c.QueryWorkflow(ctx, id, "", ProgressName, 0)
		var p Progress
		if err == nil && v.Get(&p) == nil && len(p.Waiting) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	one := int64(1)
	for _, u := range []struct {
		name string
		arg  any
	}{
		{WriteUpdate, liveboard.WriteRequest{Key: "jobs:next", Value: "deploy", ExpectVersion: &one}},
		{WriteUpdate, liveboard.WriteRequest{Key: "jobs:next", Value: "stale", ExpectVersion: &one}},
		{AnswerUpdate, board.Answer{Label: "review", Answer: map[string]any{"approve": "yes"}}},
		{AnswerUpdate, board.Answer{Label: "review", Answer: map[string]any{"approve": true}, By: "ana"}},
	} {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: u.name, Args: []any{u.arg},
			WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(ctx, nil)
		}
		t.Logf("%s %v: %v", u.name, u.arg, err)
	}
}

func TestReplayHistories(t *testing.T) {
	if *recordHistories {
		recordAll(t)
	}
	// testdata/histories holds the histories of today's workflow; each
	// folder in it, those of an earlier one (named for the change that
	// came after it). Every one must replay: runs started before an
	// upgrade finish on the new workers.
	files, _ := filepath.Glob("testdata/histories/*.json")
	if len(files) < len(historyPlans) {
		t.Fatalf("testdata/histories holds %d histories, want %d (record them with -record-histories)", len(files), len(historyPlans))
	}
	older, _ := filepath.Glob("testdata/histories/*/*.json")
	if len(older) == 0 {
		t.Fatal("no history of an earlier workflow in testdata/histories/*/")
	}
	for _, f := range append(files, older...) {
		rel, _ := filepath.Rel("testdata/histories", f)
		t.Run(rel, func(t *testing.T) {
			r := newReplayer(t)
			Register(r, &Workflow{Store: DirStore{Dir: t.TempDir()}}, nil)
			if err := r.ReplayWorkflowHistoryFromJSONFile(quietLogger(), f); err != nil {
				t.Fatalf("the workflow no longer replays %s: %v", f, err)
			}
		})
	}
}

// A history that does not fit the workflow must fail the replay: the check
// is not vacuous. The recorded run's plan is edited (its first step becomes
// a board step, which runs in the workflow), so the activity the history
// holds is no longer scheduled.
func TestReplayDetectsChange(t *testing.T) {
	f, err := os.Open("testdata/histories/control-flow.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := hist.Events[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()[0]
	var in Input
	if err := json.Unmarshal(p.Data, &in); err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(in.Run.PlanSource, `{label: hello, type: command, run: "echo hello"}`, `{label: hello, type: board, op: read, key: x}`, 1)
	if src == in.Run.PlanSource {
		t.Fatal("the edit did not apply")
	}
	in.Run.PlanSource, in.Run.PlanSHA256 = src, Sum([]byte(src))
	p.Data, _ = json.Marshal(in)
	r := newReplayer(t)
	Register(r, &Workflow{Store: DirStore{Dir: t.TempDir()}}, nil)
	err = r.ReplayWorkflowHistory(quietLogger(), hist)
	if err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
		t.Fatalf("replaying a changed plan's history: %v; want a nondeterminism error (TMPRL1100)", err)
	}
}

func recordAll(t *testing.T) {
	srv := startDevServer(t)
	store := DirStore{Dir: t.TempDir()}
	c, err := client.Dial(client.Options{HostPort: srv.hostPort, Logger: quietLogger(), DataConverter: DataConverter(store, 0)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	acts := &Activities{Store: store, HostID: "recorder", WorkRoot: t.TempDir()}
	w := NewWorker(c, "record", acts, worker.Options{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	hw := NewHostWorker(c, "record", acts, worker.Options{}) // runs are pinned to their host
	if err := hw.Start(); err != nil {
		t.Fatal(err)
	}
	defer hw.Stop()
	t.Setenv("DEPLOY_TOKEN", recordedSecret) // the worker's environment, for the secrets history
	for name, src := range historyPlans {
		// A history is recorded once: the workflow of today must replay
		// the histories of runs started by the workflow of yesterday.
		// Delete a file to record it again.
		file := filepath.Join("testdata/histories", name+".json")
		if _, err := os.Stat(file); err == nil {
			continue
		}
		wd := t.TempDir()
		run := newRun(t, src, wd)
		run.PlanPath = filepath.Join(wd, name+".yaml") // the plan's directory travels with the run
		if err := os.WriteFile(run.PlanPath, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		we, err := Start(context.Background(), c, store, run, StartOptions{TaskQueue: "record", Options: historyOptions[name]})
		if err != nil {
			t.Fatal(err)
		}
		if name == "live" {
			drive(t, c, we.GetID())
		}
		first := we.GetRunID() // the run's first part: Get follows a continue-as-new to the last
		var out Output
		if err := OutputOf(we.Get(context.Background(), &out), &out); err != nil {
			t.Fatal(err)
		}
		hist := &historypb.History{}
		it := c.GetWorkflowHistory(context.Background(), we.GetID(), first, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			hist.Events = append(hist.Events, ev)
		}
		data, err := temporalproto.CustomJSONMarshalOptions{Indent: " "}.Marshal(hist)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s, %d events", name, out.Status, len(hist.Events))
	}
}

// The machine running the tests may be busy: its workflow tasks may take
// more than the SDK's one second without being deadlocked.
var workerOptions = worker.Options{DeadlockDetectionTimeout: WorkflowTaskBudget}

func newReplayer(t *testing.T) worker.WorkflowReplayer {
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DisableDeadlockDetection: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

package temporal

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// envOutput is the run's Output in a test environment: the workflow's
// result, or what a failed plan's error carries (OutputOf).
func envOutput(env *testsuite.TestWorkflowEnvironment, out *Output) error {
	if err := env.GetWorkflowError(); err != nil {
		return OutputOf(err, out)
	}
	return env.GetWorkflowResult(out)
}

// runWorkflow runs src in the SDK's test environment (activities run for
// real, timers on its clock) and returns the board the run left.
func runWorkflow(t *testing.T, src string, opt Options) (*board.Board, *Output) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	store := DirStore{Dir: t.TempDir()}
	dir := t.TempDir()
	Register(env, &Workflow{Store: store}, &Activities{Store: store})
	env.SetTestTimeout(5 * time.Minute)
	env.SetWorkerOptions(workerOptions)
	env.ExecuteWorkflow(WorkflowName, Input{Run: newRun(t, src, dir), Options: opt})
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	var out Output
	if err := envOutput(env, &out); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	b, err := LoadBoard(store, out.Head)
	if err != nil {
		t.Fatal(err)
	}
	return b, &out
}

// Every control-flow feature, run by the workflow and by the root engine:
// the step records (status, visits, attempts, gotos, errors, results) and
// the board's entries must be the same.
func TestWorkflowMatchesEngine(t *testing.T) {
	tests := []struct {
		name, src, status, errText string
	}{
		{"sequence and templates", `
version: 1
vars: {who: world, n: 2}
steps:
  - {label: hello, type: command, run: "echo hello ${{ vars.who }}"}
  - {label: shout, type: command, run: "echo ${{ steps.hello.stdout }} | tr a-z A-Z"}
  - {label: count, type: command, run: "echo ${{ vars.n + 1 }}"}
`, "succeeded", ""},
		{"branch goto loop", `
version: 1
vars: {rounds: 3}
steps:
  - {label: work, type: command, run: "echo round ${{ steps.work.visits + 1 }}"}
  - label: again
    type: branch
    cases:
      - {when: steps.work.visits < vars.rounds, goto: work}
    default: next
  - {label: skipped, type: command, run: "echo never"}
  - {label: next, type: command, run: "echo ${{ steps.work.output }}"}
`, "succeeded", ""},
		{"branch fail", `
version: 1
steps:
  - {label: a, type: command, run: "echo a"}
  - label: decide
    type: branch
    cases:
      - {when: steps.a.stdout == "b", goto: end}
    default: fail
`, "failed", "step decide: the branch chose fail"},
		{"if", `
version: 1
vars: {go: false}
steps:
  - {label: maybe, type: command, run: "echo ran", if: vars.go}
  - {label: always, type: command, run: "echo ${{ steps.maybe.skipped }}", if: "!vars.go"}
`, "succeeded", ""},
		{"retry until the command passes", `
version: 1
steps:
  - label: flaky
    type: command
    run: 'n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; echo try $n; test $n -ge 3'
    retry: {max: 5, backoff: 1ms}
  - {label: after, type: command, run: "echo ${{ steps.flaky.output }}"}
`, "succeeded", ""},
		{"retry until expression", `
version: 1
steps:
  - label: poll
    type: command
    run: 'n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; echo $n'
    retry: {max: 4, backoff: 1ms, until: 'step.stdout == "2\n"'}
`, "succeeded", ""},
		{"retry runs out", `
version: 1
steps:
  - {label: never, type: command, run: "exit 3", retry: {max: 2, backoff: 1ms}}
`, "failed", "step never: "},
		{"agents' board key patterns", `
version: 1
agents:
  bot: {provider: script, responses: [x], board: {write: ["notes:*"]}}
steps:
  - {label: ok, type: board, op: write, key: "notes:a", value: 1, author: bot}
  - {label: denied, type: board, op: write, key: secret, value: 2, author: bot, continue_on_error: true}
  - {label: after, type: command, run: "echo denied=${{ steps.denied.failed }}"}
`, "succeeded", ""},
		{"continue_on_error", `
version: 1
steps:
  - {label: bad, type: command, run: "echo oops >&2; exit 2", continue_on_error: true}
  - {label: after, type: command, run: "echo ${{ steps.bad.failed }} ${{ steps.bad.exit_code }}"}
`, "succeeded", ""},
		{"step timeout", `
version: 1
steps:
  - {label: slow, type: command, run: "sleep 5", timeout: 300ms}
`, "failed", "step slow: timed out after 300ms"},
		{"max_visits", `
version: 1
steps:
  - {label: spin, type: command, run: "echo x", max_visits: 3}
  - label: back
    type: branch
    max_visits: 10
    cases:
      - {when: "true", goto: spin}
`, "failed", "step spin: visited 4 times, past its max_visits of 3"},
		{"max_steps", `
version: 1
limits: {max_steps: 5}
steps:
  - {label: spin, type: command, run: "echo x", max_visits: 100}
  - label: back
    type: branch
    max_visits: 100
    cases:
      - {when: "true", goto: spin}
`, "failed", "limits.max_steps 5 reached"},
		{"board write read delete and write.key", `
version: 1
steps:
  - {label: put, type: board, op: write, key: greeting, value: "hi ${{ run.plan }}"}
  - {label: get, type: board, op: read, key: greeting}
  - {label: cas, type: board, op: write, key: greeting, value: again, expect_version: 1}
  - {label: cas_lost, type: board, op: write, key: greeting, value: lost, expect_version: 1, continue_on_error: true}
  - {label: del, type: board, op: delete, key: greeting}
  - {label: said, type: command, run: "echo ${{ steps.get.output }} ${{ board('greeting') == nil }}", write: {key: said}}
  - {label: read_said, type: command, run: "echo ${{ board('said') }}"}
`, "succeeded", ""},
		{"parallel group", `
version: 1
steps:
  - {label: first, type: command, run: "echo go"}
  - label: checks
    parallel:
      - {label: a, type: command, run: "echo a${{ steps.first.stdout }}"}
      - {label: b, type: command, run: "sleep 0.1; echo b"}
      - {label: c, type: board, op: write, key: c, value: seen}
  - {label: last, type: command, run: "echo ${{ steps.checks.output.b }}"}
`, "succeeded", ""},
		{"parallel max_concurrency", `
version: 1
steps:
  - label: group
    max_concurrency: 2
    parallel:
      - {label: s1, type: command, run: "touch r.s1; sleep 0.3; ls r.* | wc -l >> seen; sleep 0.3; rm r.s1"}
      - {label: s2, type: command, run: "touch r.s2; sleep 0.3; ls r.* | wc -l >> seen; sleep 0.3; rm r.s2"}
      - {label: s3, type: command, run: "touch r.s3; sleep 0.3; ls r.* | wc -l >> seen; sleep 0.3; rm r.s3"}
  - {label: most, type: command, run: "sort -n seen | tail -1"}
`, "succeeded", ""},
		{"parallel without fail_fast", `
version: 1
steps:
  - label: group
    fail_fast: false
    parallel:
      - {label: ok1, type: command, run: "sleep 0.2; echo fine"}
      - {label: bad, type: command, run: "exit 1"}
      - {label: bad2, type: command, run: "exit 2", continue_on_error: true}
`, "failed", "step group: step bad: exit status 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, werr := inProcess(t, tt.src)
			got, out := runWorkflow(t, tt.src, Options{})
			if out.Status != tt.status || !strings.Contains(out.Error, tt.errText) {
				t.Errorf("temporal run: %s %q, want %s %q", out.Status, out.Error, tt.status, tt.errText)
			}
			if want.Run().Status != out.Status || want.Run().Error != out.Error {
				t.Errorf("in-process run: %s %q (%v); temporal: %s %q", want.Run().Status, want.Run().Error, werr, out.Status, out.Error)
			}
			if d := sameSteps(want.Steps(), got.Steps()); d != "" {
				t.Errorf("steps differ: %s\nin-process: %s\ntemporal:   %s", d, runSummary(want), runSummary(got))
			}
			if d := firstDiff(entriesView(want), entriesView(got)); d != "" {
				t.Errorf("entries differ: %s", d)
			}
			if got.Run().Status != out.Status || got.Run().FinishedAt == nil {
				t.Errorf("saved run: %s, finished %v", got.Run().Status, got.Run().FinishedAt)
			}
		})
	}
}

func quietLogger() tlog.Logger {
	return tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// fail_fast: the first failure cancels running siblings (their activities
// are canceled) and keeps the others from starting.
func TestWorkflowFailFast(t *testing.T) {
	b, out := runWorkflow(t, `
version: 1
steps:
  - label: group
    max_concurrency: 2
    parallel:
      - {label: slow, type: command, run: "sleep 10"}
      - {label: bad, type: command, run: "sleep 0.2; exit 1"}
      - {label: later, type: command, run: "echo never"}
  - {label: never, type: command, run: "echo never"}
`, Options{})
	if out.Status != "failed" || out.Error != "step group: step bad: exit status 1" {
		t.Errorf("run: %s %q", out.Status, out.Error)
	}
	// As in process (SPEC: canceled is stopped by fail_fast or Ctrl-C,
	// not failed by itself): the running sibling and the one kept from
	// starting are canceled.
	want := map[string]string{"slow": "canceled canceled: a sibling step failed (fail_fast)",
		"bad": "failed exit status 1", "later": "canceled not started", "group": "failed step bad: exit status 1"}
	for _, s := range b.Steps() {
		w, ok := want[s.Label]
		if !ok {
			t.Errorf("step %s ran", s.Label)
			continue
		}
		delete(want, s.Label)
		status, text, _ := strings.Cut(w, " ")
		if s.Status != status || !strings.HasPrefix(s.Error, text) {
			t.Errorf("%s: %s %q, want %s %q...", s.Label, s.Status, s.Error, status, text)
		}
	}
	for l := range want {
		t.Errorf("no record for %s", l)
	}
}

// Canceling the workflow (what Ctrl-C on `runner run --engine temporal`
// does) stops the running step and ends the run as interrupted, with
// every finished step kept.
func TestWorkflowInterrupt(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	store := DirStore{Dir: settledDir(t)}
	Register(env, &Workflow{Store: store}, &Activities{Store: store})
	env.SetTestTimeout(2 * time.Minute)
	env.SetWorkerOptions(workerOptions)
	src := `
version: 1
steps:
  - {label: first, type: command, run: "echo one"}
  - {label: slow, type: command, run: "echo started > started; sleep 20"}
  - {label: never, type: command, run: "echo never"}
`
	run := newRun(t, src, settledDir(t))
	started := 0
	env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) {
		if started++; started == 2 {
			env.RegisterDelayedCallback(env.CancelWorkflow, time.Millisecond)
		}
	})
	begin := time.Now()
	env.ExecuteWorkflow(WorkflowName, Input{Run: run})
	if d := time.Since(begin); d > 15*time.Second {
		t.Errorf("the interrupt took %s: the running step was not stopped", d)
	}
	var out Output
	if err := envOutput(env, &out); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	b, err := LoadBoard(store, out.Head)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "interrupted" || b.Run().Status != "interrupted" {
		t.Errorf("run %s / saved %s, want interrupted", out.Status, b.Run().Status)
	}
	if got := runSummary(b); got != "first:succeeded slow:canceled" {
		t.Errorf("steps: %s", got)
	}
}

// limits.timeout is a durable timer: here it fires during a retry's
// backoff, and the run fails saying so.
func TestWorkflowRunTimeout(t *testing.T) {
	b, out := runWorkflow(t, `
version: 1
limits: {timeout: 30s}
steps:
  - {label: flaky, type: command, run: "exit 1", retry: {max: 3, backoff: 1h}}
  - {label: never, type: command, run: "echo never"}
`, Options{})
	if out.Status != "failed" || out.Error != "step flaky: limits.timeout reached (30s)" {
		t.Errorf("run: %s %q", out.Status, out.Error)
	}
	// As in process: the step the timeout cut is canceled, the run failed.
	if got := runSummary(b); got != "flaky:canceled" {
		t.Errorf("steps: %s", got)
	}
	// Backoffs (capped at max_backoff) were slept as timers until the cut.
	if s := b.Steps(); len(s) == 1 && (s[0].Attempts < 1 || len(s[0].Delays) != s[0].Attempts) {
		t.Errorf("flaky: %d attempts, delays %v", s[0].Attempts, s[0].Delays)
	}
}

// A run whose history grows past MaxHistoryEvents continues as new at a
// top-level step: the next part starts from the carried board, step and
// visit counts, so the loop ends where it would have in one part (the
// visit numbers go on, max_visits and limits.max_steps count across
// parts).
func TestWorkflowContinuesAsNew(t *testing.T) {
	src := `
version: 1
limits: {max_steps: 61}
steps:
  - {label: tick, type: command, run: "echo tick", max_visits: 30}
  - label: again
    type: branch
    max_visits: 30
    cases:
      - {when: steps.tick.visits < 30, goto: tick}
  - {label: done, type: command, run: "echo ${{ steps.tick.visits }}"}
`
	store := DirStore{Dir: t.TempDir()}
	in := Input{Run: newRun(t, src, t.TempDir()), Options: Options{MaxHistoryEvents: 40}}
	var out Output
	for part := 0; ; part++ {
		if part > 20 {
			t.Fatal("the run did not end in 20 parts")
		}
		var s testsuite.WorkflowTestSuite
		s.SetLogger(quietLogger())
		env := s.NewTestWorkflowEnvironment()
		Register(env, &Workflow{Store: store}, &Activities{Store: store})
		env.SetWorkerOptions(workerOptions)
		// The suite keeps no history: it is made to look long after ten
		// steps of each part.
		started := 0
		env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) {
			if started++; started == 10 {
				env.SetCurrentHistoryLength(1000)
			}
		})
		env.ExecuteWorkflow(WorkflowName, in)
		var can *workflow.ContinueAsNewError
		if err := env.GetWorkflowError(); errors.As(err, &can) {
			in = Input{}
			if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
				t.Fatal(err)
			}
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		if err := envOutput(env, &out); err != nil {
			t.Fatal(err)
		}
		break
	}
	b, err := LoadBoard(store, out.Head)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "succeeded" || out.Parts < 2 {
		t.Fatalf("run %s %q in %d parts; want succeeded after continuing as new", out.Status, out.Error, out.Parts)
	}
	if n := len(b.Steps()); n != 61 {
		t.Errorf("%d step records, want 61", n)
	}
	if done := stepOf(t, b, "done"); !strings.Contains(string(done.Result), `"output":"30"`) {
		t.Errorf("done saw %s; want 30 visits of tick", done.Result)
	}
}

// A plan that fails fails its workflow with an error of type
// runner.PlanFailed that names the plan and carries the run's output.
func TestWorkflowFailedPlanFailsWorkflow(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	store := DirStore{Dir: t.TempDir()}
	Register(env, &Workflow{Store: store}, &Activities{Store: store})
	env.SetWorkerOptions(workerOptions)
	env.ExecuteWorkflow(WorkflowName, Input{Run: newRun(t, "version: 1\nname: broken\nsteps:\n  - {label: a, type: command, run: 'exit 3'}\n", t.TempDir())})
	err := env.GetWorkflowError()
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrPlanFailed || !strings.Contains(app.Error(), "plan broken failed: step a: exit status 3") {
		t.Fatalf("workflow error %v; want a %s naming the plan and its error", err, ErrPlanFailed)
	}
	var out Output
	if err := OutputOf(err, &out); err != nil || out.Status != "failed" {
		t.Fatalf("OutputOf: %v, %+v", err, out)
	}
	if b, err := LoadBoard(store, out.Head); err != nil || runSummary(b) != "a:failed" {
		t.Fatalf("the board the failure carries: %v", err)
	}
}

// Each activity is named for its step: label#visit (a for_each item's
// label is LABEL[i]), .attempt from a step's second retry on, and a
// summary with the step's type and what it does.
func TestWorkflowActivityIDs(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	store := DirStore{Dir: t.TempDir()}
	Register(env, &Workflow{Store: store}, &Activities{Store: store})
	env.SetWorkerOptions(workerOptions)
	var mu sync.Mutex
	var ids []string
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		mu.Lock()
		ids = append(ids, info.ActivityID)
		mu.Unlock()
	})
	env.ExecuteWorkflow(WorkflowName, Input{Run: newRun(t, `
version: 1
steps:
  - {label: hello, type: command, run: "echo hi"}
  - {label: twice, type: command, run: "echo again"}
  - label: back
    type: branch
    cases: [{when: steps.twice.visits < 2, goto: twice}]
  - {label: each, type: command, for_each: '["x", "y"]', run: "echo ${{ item }}"}
  - label: flaky
    type: command
    run: 'n=$(cat n 2>/dev/null || echo 0); echo $((n+1)) > n; test $n -ge 1'
    retry: {max: 2, backoff: 1ms}
`, t.TempDir())})
	var out Output
	if err := envOutput(env, &out); err != nil || out.Status != "succeeded" {
		t.Fatalf("%v %+v", err, out)
	}
	slices.Sort(ids)
	want := []string{"each[0]#1", "each[1]#1", "flaky#1", "flaky#1.2", "hello#1", "twice#1", "twice#2"}
	if !slices.Equal(ids, want) {
		t.Errorf("activity ids %q, want %q", ids, want)
	}
	n := &engine.Node{Step: plans.NewStep("build", "")}
	if got := activitySummary(n); got != "build" {
		t.Errorf("summary of a bare node: %q", got)
	}
}

// settledDir is a temporary directory for a run that is canceled: the
// test environment's ExecuteWorkflow returns when the workflow ends,
// while the canceled activity's step is still being stopped, and may
// write there as t.TempDir's cleanup empties it ("directory not
// empty"). It is removed once nothing writes there any more.
func settledDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "runner-temporal-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(time.Minute)
		for {
			err := os.RemoveAll(dir)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("removing %s: %v", dir, err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	return dir
}

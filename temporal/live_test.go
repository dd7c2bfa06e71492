package temporal

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/replay"
	"github.com/planrunner/runner/internal/steps"
	"go.temporal.io/sdk/testsuite"
)

const reviewPlan = `
version: 1
steps:
  - label: review
    type: input
    prompt: "Ship ${{ vars.what }}?"
    timeout: 1h
    form:
      properties:
        risk: {type: string, enum: [low, high]}
        approve: {type: boolean}
      required: [approve]
    default: {approve: false}
  - {label: note, type: command, run: "echo approve=${{ steps.review.output.approve }} by=${{ steps.review.by }}"}
vars: {what: v2}
`

// liveEnv is a test environment running one plan, for driving updates and
// queries at chosen moments of its clock.
type liveEnv struct {
	t     *testing.T
	env   *testsuite.TestWorkflowEnvironment
	store Store
}

func newLiveEnv(t *testing.T) *liveEnv { return newLiveEnvIn(t, DirStore{Dir: t.TempDir()}) }

// newLiveEnvIn is a test environment whose workflow and activities use store.
func newLiveEnvIn(t *testing.T, store Store) *liveEnv {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	Register(env, &Workflow{Store: store}, &Activities{Store: store})
	env.SetTestTimeout(2 * time.Minute)
	env.SetWorkerOptions(workerOptions)
	return &liveEnv{t: t, env: env, store: store}
}

// at runs f once the workflow's clock has moved d from its start.
func (l *liveEnv) at(d time.Duration, f func()) { l.env.RegisterDelayedCallback(f, d) }

// outcome is what became of an update: its result, or why it was
// refused. The test environment settles updates as the workflow takes
// them, so outcomes are read once the run has moved on.
type outcome struct {
	done     bool
	rejected bool // by the update's validator: the history holds nothing of it
	value    any
	err      error
}

// update sends an update; its outcome fills in later.
func (l *liveEnv) update(name string, arg any) *outcome {
	o := &outcome{}
	l.env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnReject:   func(e error) { o.done, o.rejected, o.err = true, true, e },
		OnComplete: func(v any, e error) { o.done, o.value, o.err = true, v, e },
	}, arg)
	return o
}

func (l *liveEnv) query(name string, out any, args ...any) {
	l.t.Helper()
	v, err := l.env.QueryWorkflow(name, args...)
	if err != nil {
		l.t.Fatalf("query %s: %v", name, err)
	}
	if err := v.Get(out); err != nil {
		l.t.Fatal(err)
	}
}

func (l *liveEnv) run(src string) (*board.Board, *Output) {
	l.t.Helper()
	return l.runInput(Input{Run: newRun(l.t, src, l.t.TempDir())})
}

// runInput runs the workflow to its end and returns the board it left.
func (l *liveEnv) runInput(in Input) (*board.Board, *Output) {
	l.t.Helper()
	l.env.ExecuteWorkflow(WorkflowName, in)
	if !l.env.IsWorkflowCompleted() {
		l.t.Fatal("the workflow did not complete")
	}
	var out Output
	if err := envOutput(l.env, &out); err != nil {
		l.t.Fatalf("workflow error: %v", err)
	}
	b, err := LoadBoard(l.store, out.Head)
	if err != nil {
		l.t.Fatal(err)
	}
	return b, &out
}

func stepOf(t *testing.T, b *board.Board, label string) board.StepRecord {
	t.Helper()
	for _, s := range b.Steps() {
		if s.Label == label {
			return s
		}
	}
	t.Fatalf("no step %s on the board", label)
	return board.StepRecord{}
}

// An input step waits in the workflow, with no worker busy, until the
// runner.answer update; wrong answers are refused with the field named
// and change nothing; the same answer again is harmless, a different one
// a conflict; the next step sees the answer.
func TestInputWaitsForAnswerUpdate(t *testing.T) {
	l := newLiveEnv(t)
	refused := []struct {
		a    board.Answer
		want error
		text string
		o    *outcome
	}{
		{a: board.Answer{Label: "review", Answer: map[string]any{"risk": "low"}}, want: board.ErrBadAnswer, text: `"approve" is required`},
		{a: board.Answer{Label: "review", Answer: map[string]any{"approve": "yes"}}, want: board.ErrBadAnswer, text: "approve"},
		{a: board.Answer{Label: "review", Answer: map[string]any{"approve": true, "colour": "red"}}, want: board.ErrBadAnswer, text: `"colour"`},
		{a: board.Answer{Label: "note", Answer: map[string]any{"approve": true}}, want: board.ErrNotWaiting, text: "it waits for: review"},
		{a: board.Answer{Label: "review", Visit: 2, Answer: map[string]any{"approve": true}}, want: board.ErrNotWaiting, text: "review#2"},
	}
	var waiting Progress
	l.at(10*time.Minute, func() {
		l.query(ProgressName, &waiting, 0)
		for i := range refused {
			refused[i].o = l.update(AnswerUpdate, refused[i].a)
		}
	})
	var first, again, other *outcome
	l.at(11*time.Minute, func() {
		first = l.update(AnswerUpdate, board.Answer{Label: "review", Answer: map[string]any{"approve": true, "risk": "low"}, By: "ana"})
		again = l.update(AnswerUpdate, board.Answer{Label: "review", Answer: map[string]any{"risk": "low", "approve": true}, By: "ana"})
		other = l.update(AnswerUpdate, board.Answer{Label: "review", Visit: 1, Answer: map[string]any{"approve": false}})
	})
	b, out := l.run(reviewPlan)
	if out.Status != "succeeded" {
		t.Fatalf("run %s: %s", out.Status, out.Error)
	}
	if w := waiting.Waiting; len(w) != 1 || w[0].Label != "review" || w[0].Prompt != "Ship v2?" || w[0].Deadline == nil {
		t.Errorf("progress while waiting: %+v; want review waiting with its prompt and deadline", w)
	}
	for _, r := range refused {
		err := Refused(r.o.err)
		if !r.o.rejected || !errors.Is(err, r.want) || !strings.Contains(fmt.Sprint(err), r.text) {
			t.Errorf("answer %+v: %v (rejected by the validator: %v); want %v naming %s, rejected", r.a, err, r.o.rejected, r.want, r.text)
		}
	}
	if rep, ok := first.value.(liveboard.AnswerReply); !ok || first.err != nil || rep.Visit != 1 || rep.Already {
		t.Errorf("the answer: %+v", first)
	}
	if rep, ok := again.value.(liveboard.AnswerReply); !ok || again.err != nil || !rep.Already {
		t.Errorf("the same answer again: %+v; want already answered", again)
	}
	if err := Refused(other.err); !other.rejected || !errors.Is(err, board.ErrAnswerConflict) || !strings.Contains(err.Error(), `"approve":true`) {
		t.Errorf("a different answer: %v; want a conflict quoting the first", err)
	}
	note := stepOf(t, b, "note")
	if !strings.Contains(string(note.Result), "approve=true by=ana") {
		t.Errorf("the next step saw %s; want the answer", note.Result)
	}
	if review := stepOf(t, b, "review"); review.DurationMS < (11 * time.Minute).Milliseconds() {
		t.Errorf("review took %d ms; it should have waited for the answer at 11 min", review.DurationMS)
	}
	if len(b.Run().Waiting) != 0 {
		t.Errorf("the saved run still lists waiting inputs: %+v", b.Run().Waiting)
	}
	if n := countKind(b, steps.KindInput); n != 1 {
		t.Errorf("%d input recordings; want exactly 1 (the repeated answer is not recorded again)", n)
	}
}

// No answer before the input's timeout: the workflow's durable timer
// fires and the step takes its default.
func TestInputTimeoutOnTemporalTakesDefault(t *testing.T) {
	l := newLiveEnv(t)
	b, out := l.run(reviewPlan)
	if out.Status != "succeeded" {
		t.Fatalf("run %s: %s", out.Status, out.Error)
	}
	review := stepOf(t, b, "review")
	if !strings.Contains(string(review.Result), `"timed_out":true`) || !strings.Contains(string(review.Result), `"default":true`) {
		t.Errorf("review: result %s; want timed out, the default taken", review.Result)
	}
	if got := review.DurationMS; got < time.Hour.Milliseconds() || got > time.Hour.Milliseconds()+60_000 {
		t.Errorf("review waited %d ms; want its 1h timeout", got)
	}
	if note := stepOf(t, b, "note"); !strings.Contains(string(note.Result), "approve=false") {
		t.Errorf("note saw %s; want the default", note.Result)
	}
}

// Writes from outside reach the running plan: an update lands on the
// board (meta.via temporal, recorded for replay), reads and watches are
// queries, refused writes (a version mismatch) change nothing, and the
// plan's next step sees the write.
func TestBoardUpdatesAndQueries(t *testing.T) {
	l := newLiveEnv(t)
	src := `
version: 1
steps:
  - {label: seed, type: board, op: write, key: "jobs:next", value: build}
  - label: hold
    type: input
    prompt: go on?
    form: {properties: {ok: {type: boolean}}, required: [ok]}
  - {label: use, type: command, run: "echo next=${{ board('jobs:next') }}"}
`
	var first, after Changes
	var read liveboard.ReadReply
	var live []board.Entry
	var stale, empty, write *outcome
	l.at(time.Minute, func() {
		l.query(ChangesQuery, &first, ChangesArgs{Filter: liveboard.Filter{After: 0}})
		seven, one := int64(7), int64(1)
		stale = l.update(WriteUpdate, liveboard.WriteRequest{Key: "jobs:next", Value: "x", ExpectVersion: &seven})
		empty = l.update(WriteUpdate, liveboard.WriteRequest{Key: " ", Value: "x"})
		write = l.update(WriteUpdate, liveboard.WriteRequest{Key: "jobs:next", Value: "deploy", Agent: "ops", ExpectVersion: &one})
	})
	l.at(2*time.Minute, func() {
		l.query(ReadQuery, &read, ReadArgs{Key: "jobs:next"})
		l.query(LiveQuery, &live, LiveArgs{Prefix: "jobs:"})
		l.query(ChangesQuery, &after, ChangesArgs{Filter: liveboard.Filter{After: first.Next, Prefix: "jobs:"}})
		l.update(AnswerUpdate, board.Answer{Label: "hold", Answer: map[string]any{"ok": true}})
	})
	b, out := l.run(src)
	if out.Status != "succeeded" {
		t.Fatalf("run %s: %s", out.Status, out.Error)
	}
	if n := len(first.Changes); n == 0 || first.Changes[n-1].Key != "jobs:next" || first.Ended {
		t.Errorf("changes from the start: %+v", first)
	}
	if !errors.Is(Refused(stale.err), board.ErrVersion) {
		t.Errorf("a stale compare-and-set: %+v; want a version mismatch", stale)
	}
	if !empty.done || empty.err == nil {
		t.Errorf("an empty key: %+v; want it refused", empty)
	}
	if e, ok := write.value.(board.Entry); !ok || e.Version != 2 || e.Author != "ops" {
		t.Errorf("the write: %+v", write)
	}
	if !read.Found || read.Entry.Content != "deploy" {
		t.Errorf("read after the write: %+v", read)
	}
	if len(live) != 1 || live[0].Version != 2 {
		t.Errorf("live jobs: %+v", live)
	}
	if len(after.Changes) != 1 || after.Changes[0].Value != "deploy" || after.Changes[0].Meta["via"] != board.ViaTemporal {
		t.Errorf("changes after the write: %+v", after.Changes)
	}
	if use := stepOf(t, b, "use"); !strings.Contains(string(use.Result), "next=deploy") {
		t.Errorf("the plan's next step saw %s; want the outside write", use.Result)
	}
	if n := countKind(b, replay.KindExternal); n != 1 {
		t.Errorf("%d external recordings; want 1 (the refused writes are not recorded)", n)
	}
	var page Changes
	l.query(ChangesQuery, &page, ChangesArgs{Filter: liveboard.Filter{After: -1}})
	if !page.Ended {
		t.Error("after the end, the changes query does not say the run ended")
	}
}

func countKind(b *board.Board, kind string) int {
	n := 0
	for _, r := range b.Recordings() {
		if r.Kind == kind {
			n++
		}
	}
	return n
}

// Inputs in a parallel group wait in their own coroutines while the
// sibling command runs; each is answered on its own, in any order. An
// input in a loop waits again at each visit, and a label-only answer goes
// to the visit that waits.
func TestInputsInGroupsAndLoops(t *testing.T) {
	l := newLiveEnv(t)
	src := `
version: 1
steps:
  - label: ask
    parallel:
      - {label: legal, type: input, prompt: "Legal?", form: {properties: {ok: {type: boolean}}, required: [ok]}}
      - {label: budget, type: input, prompt: "Budget?", form: {properties: {usd: {type: integer}}, required: [usd]}}
      - {label: prep, type: command, run: echo prepared}
  - {label: round, type: input, prompt: "Round ${{ steps.round.visits + 1 }}: more?", form: {properties: {more: {type: boolean}}, required: [more]}}
  - label: again
    type: branch
    cases:
      - {when: steps.round.output.more, goto: round}
    default: done
  - {label: done, type: command, run: "echo legal=${{ steps.legal.output.ok }} usd=${{ steps.budget.output.usd }} rounds=${{ steps.round.visits }}"}
`
	var waiting [][]string
	look := func() {
		var p Progress
		l.query(ProgressName, &p, 0)
		var w []string
		for _, x := range p.Waiting {
			w = append(w, fmt.Sprintf("%s#%d", x.Label, x.Visit))
		}
		waiting = append(waiting, w)
	}
	answers := []struct {
		at time.Duration
		a  board.Answer
	}{
		{time.Minute, board.Answer{Label: "budget", Answer: map[string]any{"usd": 12}}},
		{2 * time.Minute, board.Answer{Label: "legal", Answer: map[string]any{"ok": true}}},
		{3 * time.Minute, board.Answer{Label: "round", Answer: map[string]any{"more": true}}},
		{4 * time.Minute, board.Answer{Label: "round", Visit: 2, Answer: map[string]any{"more": false}}},
	}
	var outcomes []*outcome
	for _, x := range answers {
		l.at(x.at-time.Second, look)
		l.at(x.at, func() { outcomes = append(outcomes, l.update(AnswerUpdate, x.a)) })
	}
	b, out := l.run(src)
	if out.Status != "succeeded" {
		t.Fatalf("run %s: %s", out.Status, out.Error)
	}
	want := "[[legal#1 budget#1] [legal#1] [round#1] [round#2]]"
	if got := fmt.Sprint(waiting); got != want {
		t.Errorf("waiting before each answer: %s; want %s", got, want)
	}
	for i, o := range outcomes {
		if !o.done || o.err != nil {
			t.Errorf("answer %d: %+v", i, o)
		}
	}
	if done := stepOf(t, b, "done"); !strings.Contains(string(done.Result), "legal=true usd=12 rounds=2") {
		t.Errorf("done saw %s", done.Result)
	}
}

// An agent's board key patterns hold on Temporal as in process: a write
// outside them fails its step (the plan's own, in the workflow) and an
// outside write as that agent is refused.
func TestBoardPermsOnTemporal(t *testing.T) {
	l := newLiveEnv(t)
	src := `
version: 1
agents:
  bot: {provider: script, responses: [x], board: {write: ["notes:*"]}}
steps:
  - {label: denied, type: board, op: write, key: secret, value: 2, author: bot, continue_on_error: true}
  - label: hold
    type: input
    prompt: go on?
    form: {properties: {ok: {type: boolean}}, required: [ok]}
`
	var outside, allowed *outcome
	l.at(time.Minute, func() {
		outside = l.update(WriteUpdate, liveboard.WriteRequest{Key: "secret", Value: "x", Agent: "bot"})
		allowed = l.update(WriteUpdate, liveboard.WriteRequest{Key: "notes:b", Value: "y", Agent: "bot"})
		l.update(AnswerUpdate, board.Answer{Label: "hold", Answer: map[string]any{"ok": true}})
	})
	b, out := l.run(src)
	if out.Status != "succeeded" {
		t.Fatalf("run %s: %s", out.Status, out.Error)
	}
	if d := stepOf(t, b, "denied"); d.Status != "failed" || !strings.Contains(d.Error, "secret") {
		t.Errorf("the plan's write outside bot's patterns: %s %q; want failed naming the key", d.Status, d.Error)
	}
	if !errors.Is(Refused(outside.err), board.ErrDenied) {
		t.Errorf("an outside write as bot outside its patterns: %+v; want denied", outside)
	}
	if allowed.err != nil {
		t.Errorf("an outside write as bot inside its patterns: %v", allowed.err)
	}
}

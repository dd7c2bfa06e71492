package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/testutil/planfuzz"
	"github.com/rs/zerolog"
	"go.temporal.io/sdk/testsuite"
)

var (
	crossPlans = flag.Int("cross-plans", 200, "random plans TestCrossEngineRandomPlans runs on both engines")
	crossSeed  = flag.Uint64("cross-seed", 0, "seed of TestCrossEngineRandomPlans (0: a new one, printed)")
	crossOnly  = flag.Int("cross-plan", -1, "run only this plan of TestCrossEngineRandomPlans (with -cross-seed)")
)

// Random plans (groups with and without fail_fast and max_concurrency,
// retries, until, loops, step timeouts, board writes, a script agent) run
// in process and on the SDK's test suite must leave the same run: status
// and error, and record for record the same steps (status, result,
// output, goto, attempts, error; the top-level path in order) and
// entries. One interpreter drives both engines: a difference is a
// driver's. -cross-plans N runs more; -cross-seed S repeats a run.
func TestCrossEngineRandomPlans(t *testing.T) {
	seed := *crossSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (go test -run TestCrossEngineRandomPlans -cross-seed %d to repeat)", seed, seed)
	planfuzz.Each(*crossPlans, *crossOnly, 4, func(n int) { crossCase(t, n, seed) }) // the plans mostly wait for processes
	t.Logf("%d plans; step records by type and status: %v", *crossPlans, crossSeen.counts())
}

// crossSeen counts the records the plans made, so the log shows what the
// test covered (canceled children, answered inputs, retries...).
var crossSeen tally

type tally struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *tally) add(b *board.Board) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	for _, s := range b.Steps() {
		kind := s.Type
		if kind == "" {
			kind = "group"
		}
		c.n[kind+":"+s.Status]++
	}
}

func (c *tally) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func crossCase(t *testing.T, n int, seed uint64) {
	src := planfuzz.Plan(rand.New(rand.NewPCG(seed, uint64(n))), n, planfuzz.Options{Cross: true})
	want, err := inProcessAnswering(t, src)
	if err != nil {
		t.Errorf("plan %d (seed %d): in process: %v\n%s", n, seed, err, src)
		return
	}
	got, out, err := runOnSuite(t, src)
	fail := func(format string, args ...any) {
		t.Errorf("plan %d (seed %d): "+format+"\n%s", append(append([]any{n, seed}, args...), src)...)
	}
	if err != nil {
		fail("on Temporal: %v", err)
		return
	}
	if want.Run().Status != out.Status || want.Run().Error != out.Error {
		fail("run: in process %s %q, on Temporal %s %q", want.Run().Status, want.Run().Error, out.Status, out.Error)
	}
	crossSeen.add(got)
	if d := sameCross(want, got); d != "" {
		fail("the boards differ: %s\nin process: %s\non Temporal: %s", d, runSummary(want), runSummary(got))
	}
}

// runOnSuite is runWorkflow for any goroutine: it returns what went
// wrong rather than ending the test.
func runOnSuite(t *testing.T, src string) (*board.Board, *Output, error) {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	store := DirStore{Dir: t.TempDir()}
	Register(env, &Workflow{Store: store}, &Activities{Store: store})
	env.SetTestTimeout(2 * time.Minute)
	env.SetWorkerOptions(workerOptions)
	// The questions are answered once the workflow waits: its clock moves
	// on to a callback only when nothing else is under way. A minute
	// apart: the run's clock stays well inside the plans' TTLs (24h), as
	// the run in process, answered at once, does.
	var answerErr error
	for k := range maxAnswers {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(ProgressName, 0)
			var p Progress
			if err == nil {
				err = v.Get(&p)
			}
			if err != nil {
				answerErr = err
				return
			}
			for _, w := range p.Waiting {
				a := board.Answer{Label: w.Label, Visit: w.Visit, Answer: planfuzz.Answer(w.Label, w.Visit), By: "tester"}
				env.UpdateWorkflow(AnswerUpdate, "", &testsuite.TestUpdateCallback{
					OnReject:   func(e error) { answerErr = e },
					OnComplete: func(_ any, e error) { answerErr = errors.Join(answerErr, e) },
				}, a)
			}
		}, time.Duration(k+1)*time.Minute)
	}
	env.ExecuteWorkflow(WorkflowName, Input{Run: newRun(t, src, t.TempDir())})
	if answerErr != nil {
		return nil, nil, fmt.Errorf("answering: %w", answerErr)
	}
	if !env.IsWorkflowCompleted() {
		return nil, nil, errors.New("the workflow did not complete")
	}
	var out Output
	if err := envOutput(env, &out); err != nil {
		return nil, nil, err
	}
	b, err := LoadBoard(store, out.Head)
	return b, &out, err
}

// cutShort stands for what a step stopped from outside (a sibling's
// fail_fast, an interrupt) had got to: a race, not an outcome, as a
// replay compares it (README: "for a step a failed sibling canceled, only
// that it was canceled"). The SDK's test suite also drops a canceled
// activity's result, which a server hands back with the cancellation.
const cutShort = "(cut short)"

// crossViews are a run's step records and entries as the cross-engine
// test compares them: with the results and inputs of canceled steps, and
// their outputs in their group's, set aside.
func crossViews(b *board.Board) (steps []board.StepRecord, entries []board.Entry) {
	last := map[string]string{} // a label's last status so far
	outputs := map[string]any{} // label#visit: the output compared
	for _, s := range b.Steps() {
		key := fmt.Sprintf("%s#%d", s.Label, s.Visit)
		var res map[string]any
		_ = json.Unmarshal(s.Result, &res)
		if s.Status == engine.StatusCanceled && s.Parent != "" {
			// Canceled from outside: how far it got (whether it had
			// rendered its inputs) is a race.
			res = map[string]any{"output": cutShort}
			s.Inputs = map[string]string{"": cutShort}
		} else if group, ok := res["output"].(map[string]any); ok && s.Type == "" {
			for child := range group {
				if last[child] == engine.StatusCanceled {
					group[child] = cutShort
				}
			}
		}
		last[s.Label] = s.Status
		outputs[key] = res["output"]
		s.Result, _ = json.Marshal(res)
		steps = append(steps, s)
	}
	for _, e := range b.Entries() {
		if v, ok := e.Meta["visit"]; ok && e.Role == "step" && e.Author == "runner" {
			if o, ok := outputs[fmt.Sprintf("%s#%v", e.Label, v)]; ok {
				e.Content = o
			}
		}
		entries = append(entries, e)
	}
	return steps, entries
}

// sameCross says how two runs of one plan, in process and on Temporal,
// differ in any field of blackboard.json but the per-run ones: the run,
// the step records and entries (as crossViews gives them), and the
// recordings in any order (parallel steps add theirs as they finish).
// setAside, if given, is applied to every step record of both runs first
// (a field a test expects to differ, checked on its own).
func sameCross(want, got *board.Board, setAside ...func(*board.StepRecord)) string {
	ww, gw := want.Run().Workdir, got.Run().Workdir
	if d := firstDiff([]string{jsonView(want.Run(), "run", ww)}, []string{jsonView(got.Run(), "run", gw)}); d != "" {
		return "run: " + d
	}
	ws, we := crossViews(want)
	gs, ge := crossViews(got)
	for _, f := range setAside {
		for i := range ws {
			f(&ws[i])
		}
		for i := range gs {
			f(&gs[i])
		}
	}
	if len(ws) != len(gs) {
		return fmt.Sprintf("%d step records in process, %d on Temporal", len(ws), len(gs))
	}
	if d := sameStepsIn(ws, ww, gs, gw); d != "" {
		return "steps: " + d
	}
	if d := firstDiff(entriesViewIn(we, ww), entriesViewIn(ge, gw)); d != "" {
		return "entries: " + d
	}
	if d := firstDiff(recordingsOf(want, ww, onlyInProcess...), recordingsOf(got, gw)); d != "" {
		return "recordings: " + d
	}
	return ""
}

// maxAnswers bounds the questions one run asks (the inputs of a plan,
// times its loops).
const maxAnswers = 40

// inProcessAnswering runs src as inProcess does and, each time the run
// stops waiting for answers, answers them (as runner answer does) and
// resumes it (as runner resume does).
func inProcessAnswering(t *testing.T, src string) (*board.Board, error) {
	dir := t.TempDir()
	run := newRun(t, src, dir)
	prog, err := engine.Compile("plan.yaml", []byte(src), steps.Registry())
	if err != nil {
		return nil, err
	}
	b := board.New(run)
	runner := func() *engine.Runner {
		return &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: dir, Vars: run.Vars,
			Sleep: func(context.Context, time.Duration) error { return nil }}
	}
	runner().Run(context.Background())
	for range maxAnswers {
		if b.Run().Status != board.StatusWaiting {
			return b, nil
		}
		for _, w := range b.Run().Waiting {
			a, already, err := steps.Settle(b.Run(), b.Recordings(),
				board.Answer{Label: w.Label, Visit: w.Visit, Answer: planfuzz.Answer(w.Label, w.Visit), By: "tester"})
			if err != nil {
				return nil, err
			}
			if !already {
				if err := b.AddRecording(steps.AnswerRecording(a)); err != nil {
					return nil, err
				}
			}
		}
		r := runner()
		if err := r.Restore(); err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		if err := b.UpdateRun(func(r *board.Run) { r.Status, r.Error, r.FinishedAt = board.StatusRunning, "", nil }); err != nil {
			return nil, err
		}
		r.Run(context.Background())
	}
	return nil, errors.New("still waiting after the most answers a plan asks for")
}

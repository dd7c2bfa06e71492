package temporal

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/engine"
	"github.com/planrunner/runner/internal/planfuzz"
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
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4) // the plans mostly wait for processes
	for n := range *crossPlans {
		if *crossOnly >= 0 && n != *crossOnly {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			crossCase(t, n, seed)
		}()
	}
	wg.Wait()
}

func crossCase(t *testing.T, n int, seed uint64) {
	src := planfuzz.Plan(rand.New(rand.NewPCG(seed, uint64(n))), n, planfuzz.Options{Cross: true})
	want, _ := inProcess(t, src)
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
	ws, we := crossViews(want)
	gs, ge := crossViews(got)
	if d := sameSteps(ws, gs); d != "" {
		fail("steps differ: %s\nin process: %s\non Temporal: %s", d, runSummary(want), runSummary(got))
	}
	if d := firstDiff(we, ge); d != "" {
		fail("entries differ: %s", d)
	}
}

// runOnSuite is runWorkflow for any goroutine: it returns what went
// wrong rather than ending the test.
func runOnSuite(t *testing.T, src string) (*board.Board, *Output, error) {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	store := Store{Dir: t.TempDir()}
	Register(env, &Workflow{Store: store}, &Activities{Store: store})
	env.SetTestTimeout(2 * time.Minute)
	env.SetWorkerOptions(workerOptions)
	env.ExecuteWorkflow(WorkflowName, Input{Run: newRun(t, src, t.TempDir())})
	if !env.IsWorkflowCompleted() {
		return nil, nil, errors.New("the workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		return nil, nil, err
	}
	var out Output
	if err := env.GetWorkflowResult(&out); err != nil {
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
// test compares them: stepView and entriesView, with the results of
// canceled steps, and their outputs in their group's, set aside.
func crossViews(b *board.Board) (steps []board.StepRecord, entries []string) {
	last := map[string]string{} // a label's last status so far
	outputs := map[string]any{} // label#visit: the output compared
	for _, s := range b.Steps() {
		key := fmt.Sprintf("%s#%d", s.Label, s.Visit)
		var res map[string]any
		_ = json.Unmarshal(s.Result, &res)
		if s.Status == engine.StatusCanceled && s.Parent != "" {
			res = map[string]any{"output": cutShort}
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
		content := e.Content
		if v, ok := e.Meta["visit"]; ok && e.Role == "step" && e.Author == "runner" {
			if o, ok := outputs[fmt.Sprintf("%s#%v", e.Label, v)]; ok {
				content = o
			}
		}
		c, _ := json.Marshal(content)
		m, _ := json.Marshal(e.Meta)
		entries = append(entries, fmt.Sprintf("%s/%s/%s/%s key=%s v%d deleted=%v %s %s", e.Section, e.Role, e.Author, e.Label, e.Key, e.Version, e.Deleted, c, m))
	}
	sort.Strings(entries)
	return steps, entries
}

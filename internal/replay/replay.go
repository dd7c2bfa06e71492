// Package replay re-runs a saved run from its blackboard.json and checks
// it against the recording: every model answer, clock reading, group
// order, cancellation, limit and resume comes from the recording, so a
// replay of an unchanged plan matches it exactly, offline, and a changed
// plan or a changed world shows where the run would go another way.
//
// `runner replay` is a thin wrapper around Run; a Go program that embeds
// runner calls Run itself.
package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/budget"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/steps"
	"github.com/rs/zerolog"
)

// Options say how to replay. The zero value replays the recorded plan
// offline into an in-memory board.
type Options struct {
	// Plan replaces the recorded plan (a changed one, checked against the
	// recording); nil: the plan saved in the recording.
	Plan *engine.Program
	// Registry compiles the recorded plan; nil: the built-in step types.
	Registry *engine.Registry
	// Workdir runs command, test and apply_diff steps for real there (a
	// checkout). Empty: their results come from the recording (offline).
	Workdir string
	// From, "LABEL" or "LABEL#VISIT", makes the replay a fork: it goes live
	// with the real providers when that step visit starts. It needs Workdir.
	From string
	// Models replace agents' models in the live part of a fork.
	Models map[string]string
	// Out is where the replay's blackboard.json is written; empty: memory only.
	Out string
	// ID is the replay's run id; empty: the recording's for a replay (the
	// recorded run again), a new one for a fork (a run of its own).
	ID string
	// BoardOptions open the replay's board (Redact: the secrets to mask).
	BoardOptions board.Options
	// Log receives the engine's logs; Observer sees steps start and finish.
	Log      zerolog.Logger
	Observer engine.Observer
	// Agents configures the providers of a fork's live part (HTTP client,
	// API keys); its Replay field is set by Run.
	Agents agents.Options
	// Version is written as the replay run's runner_version.
	Version string
	// Recording names the recording in the replay's run record
	// (replay_of) when rec was loaded from a file rather than opened
	// (board.Load keeps no path): a replay must say what it replays, and
	// its trace is told from the recorded run's by it.
	Recording string
}

// Report is how a replay went.
type Report struct {
	Board *board.Board // the replay's board
	// RunErr is how the replayed run ended: nil, or the recorded failure
	// when the run failed as recorded (or how a fork's live part ended).
	RunErr error
	// Divergence is the first difference from the recording; nil: none.
	Divergence *Divergence
	// Live reports that a fork went live.
	Live bool
	// Ended is where a recording that did not run to its end (the process
	// was killed or interrupted and never resumed) runs out: the replay
	// matched up to there.
	Ended string
	// Answers is the number of model answers served from the recording.
	Answers int
	// Outside are the writes from outside the run (the live board, or
	// `runner board FILE put` on its saved file) the replay made again.
	Outside []OutsideWrite
}

// Matched reports whether the replay matched its recording.
func (r *Report) Matched() bool { return r.Divergence == nil }

// ErrUsage is what errors.Is finds in the errors of a mistake in
// Options (an unknown --from step...).
var ErrUsage = errors.New("replay: a mistake in its options")

// usageError is a mistake in Options. Its text is the mistake alone:
// the command that reports it names itself.
type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == ErrUsage }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// Run replays the recording saved as rec (see board.Load).
func Run(ctx context.Context, rec *board.Board, opt Options) (*Report, error) {
	saved := rec.Run()
	prog := opt.Plan
	if prog == nil {
		reg := opt.Registry
		if reg == nil {
			reg = steps.Registry()
		}
		var err error
		if prog, err = engine.CompileToRun(saved.PlanPath, []byte(saved.PlanSource), reg); err != nil {
			return nil, usagef("the recorded plan: %v", err)
		}
	}
	// The run's --agent changes (a model, a reasoning effort) are part of
	// what its requests said: the replay's agents are the run's.
	if err := prog.Plan.Override(saved.Agents); err != nil {
		return nil, usagef("the recorded run's --agent: %v", err)
	}
	var fk *fork
	var source agents.ReplaySource = agents.FromRecordings(rec.RecordingsKeyed())
	if opt.From != "" {
		label, visit, err := checkFork(prog, rec, opt)
		if err != nil {
			return nil, err
		}
		fk = &fork{label: label, visit: visit, ReplaySource: source}
		source = fk
	}
	for name := range opt.Models {
		if prog.Plan.Agent(name) == nil {
			return nil, usagef("--agent %s: the plan has no agent %q", name, name)
		}
	}
	sc := newScript(rec, StepCaps(prog), prog.Plan.Limits.Timeout, opt.Workdir == "", fk, prog.ParentLabel)
	chk := newChecker(sc)

	run := saved
	run.PlanPath, run.PlanSHA256, run.PlanSource = prog.Plan.Path, prog.Plan.SHA256, prog.Plan.Source
	run.Status, run.Error, run.FinishedAt = board.StatusRunning, "", nil
	run.RunnerVersion, run.ReplayOf = opt.Version, cmp.Or(rec.Path(), opt.Recording)
	switch {
	case opt.ID != "":
		run.ID = opt.ID
	case fk != nil:
		run.ID = board.NewID(time.Now())
	}
	workdir := saved.Workdir // what run.workdir said when the recording was made
	if opt.Workdir != "" {
		workdir = opt.Workdir
	}
	run.Workdir = workdir
	var b *board.Board
	if opt.Out != "" {
		if err := board.CheckNew(opt.Out); err != nil {
			return nil, err
		}
		var err error
		if b, err = board.Create(opt.Out, run, opt.BoardOptions); err != nil {
			return nil, err
		}
	} else {
		b = board.New(run)
	}
	b.SetClock(sc.now)
	chk.b, chk.ext = b, newExternals(rec)
	chk.ext.apply(b, 0)

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	chk.stop = cancel
	observer := engine.Observer(chk)
	if opt.Observer != nil {
		observer = both{chk, opt.Observer}
	}
	rep := &Report{Board: b}
	var runErr error
	for i := range sc.segs {
		sc.seg = i
		aopt := opt.Agents
		aopt.Log, aopt.Replay = opt.Log, source
		// A new set for each part binds to the board as a resumed run's
		// did: its call numbers and token count go on from the recordings.
		set, err := agents.New(prog.Plan, aopt)
		if err != nil {
			return nil, usagef("%v", err)
		}
		for name, model := range opt.Models {
			if a, ok := set.Agent(name); ok {
				a.LiveModel = model
			}
		}
		r := &engine.Runner{Prog: prog, Board: b, Log: opt.Log, Workdir: workdir,
			Vars: engine.SavedVars(prog.Plan, saved.Vars), Agents: set, Observer: observer, Sleep: noSleep, Script: sc,
			Untimed: fk == nil}
		if i > 0 {
			if err := takeOver(rec, b, sc.segs[i-1].mark); err != nil {
				return nil, err
			}
			if err := r.Restore(); err != nil {
				if errors.Is(err, engine.ErrFinished) {
					break
				}
				return nil, err
			}
			if err := b.UpdateRun(func(r *board.Run) { r.Status, r.Error, r.FinishedAt = board.StatusRunning, "", nil }); err != nil {
				return nil, err
			}
		}
		chk.mu.Lock()
		chk.steps = b.NumSteps()
		chk.mu.Unlock()
		runErr = r.Run(ctx)
		if err := set.Close(); err != nil { // a fork's live part may have started MCP servers
			opt.Log.Warn().Err(err).Msg("ending the MCP servers")
		}
		if chk.stopped() || sc.live() {
			break
		}
		var ad *agents.Divergence
		if errors.As(runErr, &ad) {
			break
		}
		if errors.Is(runErr, engine.ErrEnded) {
			var re *engine.RunError
			if errors.As(runErr, &re) && i == len(sc.segs)-1 {
				rep.Ended = fmt.Sprintf("%s (visit %d)", re.Label, sc.nextVisitOf(b, re.Label))
			}
		}
	}
	rep.RunErr, rep.Live = runErr, sc.live()
	if !chk.stopped() && !sc.live() {
		var ad *agents.Divergence
		if !errors.As(runErr, &ad) {
			chk.ext.applyEnd(b) // the writes made on the saved file after the run ended
		}
	}
	rep.Outside = chk.ext.done
	rep.Divergence = chk.verdict(runErr, b)
	for _, r := range b.RecordingsKeyed() {
		if r.Kind == agents.KindLLM {
			rep.Answers++
		}
	}
	return rep, nil
}

// StepCaps gives the Caps of a recorded label's step type, as the program
// finds it: a plan label, a for_each item (LABEL[i]), a step inside a
// for_each block's item (ITEM/LABEL) or a callee's step (CALL/LABEL). The
// plan's own labels alone missed the last two, and an offline replay ran
// their commands for real. A group, or a label the program does not
// have, is the interpreter's: ReplayRerun, its steps replayed each as its
// own type says.
//
// The Caps of labels that are not the plan's own are remembered: finding
// their node builds it. A plan label's node is one lookup, not worth a
// copy of every label of a 100k-step plan.
func StepCaps(prog *engine.Program) func(label string) engine.Caps {
	var mu sync.Mutex // the live part of a fork asks from parallel children
	known := map[string]engine.Caps{}
	of := func(label string) engine.Caps {
		if n := prog.Node(label); n != nil && n.Kind != nil {
			return engine.CapsOf(n.Kind)
		}
		return engine.Caps{Replay: engine.ReplayRerun}
	}
	return func(label string) engine.Caps {
		if !strings.ContainsAny(label, "[/") {
			return of(label)
		}
		mu.Lock()
		defer mu.Unlock()
		c, ok := known[label]
		if !ok {
			c = of(label)
			known[label] = c
		}
		return c
	}
}

// nextVisitOf is the visit of label the replay stopped at.
func (s *script) nextVisitOf(b *board.Board, label string) int {
	n := 0
	for r := range b.StepsBrief() {
		if r.Label == label && r.Visit > n && finished(r) {
			n = r.Visit
		}
	}
	return n + 1
}

// takeOver brings the replay's board to where the recorded run stood when
// it was resumed: what the killed or interrupted process had written of
// the step visits it did not finish (a model call's conversation, say) is
// copied from the recording, as it happened then, not made again.
func takeOver(rec, b *board.Board, m *engine.ResumeMark) error {
	if m == nil {
		return nil
	}
	// What the replay wrote is, in the common case, the recording's
	// entries up to the resume in the same order: those are matched in
	// place (sameEntry); only the rest are matched by their normal forms
	// (three JSON encodings each, which every entry of the board got at
	// every resume of the recording before).
	es := rec.Entries()
	es = es[:min(m.Entries, len(es))]
	bs := b.Entries()
	i := 0
	for i < len(es) && i < len(bs) && sameEntry(&es[i], &bs[i]) {
		i++
	}
	have := map[string]int{}
	for _, e := range bs[i:] {
		have[normalEntry(e)]++
		takeOverNormalForms.Add(1)
	}
	for _, e := range es[i:] {
		takeOverNormalForms.Add(1)
		if k := normalEntry(e); have[k] > 0 {
			have[k]--
			continue
		}
		e.ID, e.Seq = "", 0
		if _, err := b.Append(e); err != nil {
			return fmt.Errorf("replay: taking over the recorded board at its resume: %w", err)
		}
	}
	got := map[string]int{}
	for _, r := range b.RecordingsKeyed() { // keys only: recKey
		got[recKey(r)]++
	}
	rs := rec.RecordingsKeyed()
	for _, r := range rs[:min(m.Recordings, len(rs))] {
		if k := recKey(r); got[k] > 0 {
			got[k]--
			continue
		}
		if r.Kind == engine.KindResume {
			continue
		}
		if err := b.AddRecording(r); err != nil {
			return err
		}
	}
	return nil
}

// takeOverNormalForms counts the normal forms takeOver built, for a test.
var takeOverNormalForms atomic.Int64

func recKey(r board.Recording) string {
	return fmt.Sprintf("%s\x00%s\x00%d\x00%d\x00%s", r.Kind, r.Label, r.Visit, r.Call, r.RequestSHA256)
}

// noSleep skips retry backoffs: a replay reproduces results, not waiting.
func noSleep(ctx context.Context, d time.Duration) error { return ctx.Err() }

// ParseFrom reads LABEL[#VISIT].
func ParseFrom(s string) (string, int, error) {
	label, v, hasVisit := strings.Cut(s, "#")
	visit := 1
	if hasVisit {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return "", 0, usagef("--from %s: the visit after # must be a number from 1", s)
		}
		visit = n
	}
	return label, visit, nil
}

// CheckFork is the check Run makes of a fork (Options.From) before
// anything runs: prog has the step, the recording ran the visit, and the
// fork has a workdir to go live in. A caller that makes the fork's folder
// checks first, so a refused fork leaves nothing behind.
func CheckFork(prog *engine.Program, rec *board.Board, opt Options) error {
	_, _, err := checkFork(prog, rec, opt)
	return err
}

func checkFork(prog *engine.Program, rec *board.Board, opt Options) (string, int, error) {
	label, visit, err := ParseFrom(opt.From)
	if err != nil {
		return "", 0, err
	}
	if prog.Node(label) == nil {
		return "", 0, usagef("--from %s: the plan has no step %q", opt.From, label)
	}
	if err := forkExists(rec, label, visit); err != nil {
		return "", 0, usagef("--from %s: %v", opt.From, err)
	}
	if opt.Workdir == "" {
		return "", 0, usagef("--from goes live after %s: give --workdir DIR for the steps that run from there on", opt.From)
	}
	return label, visit, nil
}

// CheckFrom says whether from ("LABEL" or "LABEL#VISIT") names a step
// visit the recording ran, where a fork of it can go live: the check a
// replay with Options.From makes before anything runs.
func CheckFrom(rec *board.Board, from string) error {
	label, visit, err := ParseFrom(from)
	if err != nil {
		return err
	}
	if err := forkExists(rec, label, visit); err != nil {
		return usagef("--from %s: %v", from, err)
	}
	return nil
}

// forkExists says what the recording holds when it never ran visit
// of label: a fork there would replay the whole run and never go live.
// For an item (LABEL[i], or a for_each block's step G[i]/X), it names
// the items the recording has.
func forkExists(rec *board.Board, label string, visit int) error {
	var visits []int
	items := map[int]bool{} // of the same for_each, any visit
	base, _, isItem := engine.SplitItemLabel(label)
	head, _, inItem := strings.Cut(label, "/")
	ihead, _, headIsItem := engine.SplitItemLabel(head)
	for s := range rec.StepsBrief() {
		if s.Label == label {
			if s.Visit == visit {
				return nil
			}
			visits = append(visits, s.Visit)
		}
		if b, i, ok := engine.SplitItemLabel(s.Label); ok && isItem && b == base {
			items[i] = true
		}
		if inItem && headIsItem {
			if b, i, ok := engine.SplitItemLabel(s.Label); ok && b == ihead {
				items[i] = true
			}
		}
	}
	if len(visits) > 0 {
		sort.Ints(visits)
		return fmt.Errorf("the recording has no visit %d of %s; it has visit(s) %s", visit, label, intRange(visits))
	}
	if len(items) > 0 {
		is := make([]int, 0, len(items))
		for i := range items {
			is = append(is, i)
		}
		sort.Ints(is)
		of := base
		if !isItem {
			of = ihead
		}
		return fmt.Errorf("the recording never ran %s; it has items %s of %s (from 0)", label, intRange(is), of)
	}
	return fmt.Errorf("the recording never ran step %s", label)
}

// intRange writes sorted numbers as ranges: 0-3, 7.
func intRange(ns []int) string {
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] <= ns[j]+1 {
			j++
		}
		if ns[i] == ns[j] {
			parts = append(parts, strconv.Itoa(ns[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ns[i], ns[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// fork says which step visit a replay goes live at.
type fork struct {
	label string
	visit int
	live  atomic.Bool // set once that visit starts
	agents.ReplaySource
}

func (f *fork) Live(label string, visit int) bool { return f.live.Load() }

// ToolRecording serves the recorded MCP exchanges of the replayed part.
func (f *fork) ToolRecording(label string, visit, n int) (board.Recording, bool) {
	if ts, ok := f.ReplaySource.(agents.ToolReplaySource); ok {
		return ts.ToolRecording(label, visit, n)
	}
	return board.Recording{}, false
}

// CodingRecording serves the recorded coding_agent sessions of the
// replayed part.
func (f *fork) CodingRecording(label string, visit, call int) (board.Recording, bool) {
	if cs, ok := f.ReplaySource.(agents.CodingReplaySource); ok {
		return cs.CodingRecording(label, visit, call)
	}
	return board.Recording{}, false
}

// Refusal serves the recorded refusals of shared budgets (the part that
// is replayed: a live visit is checked against the ledger).
func (f *fork) Refusal(label string, visit, call int, raised float64) (*budget.ExceededError, bool) {
	if rs, ok := f.ReplaySource.(agents.RefusalSource); ok {
		return rs.Refusal(label, visit, call, raised)
	}
	return nil, false
}

// both tells two observers, the checker first.
type both [2]engine.Observer

func (o both) StepStarted(label string, visit int, parent string) {
	o[0].StepStarted(label, visit, parent)
	o[1].StepStarted(label, visit, parent)
}

func (o both) StepFinished(rec board.StepRecord) {
	o[0].StepFinished(rec)
	o[1].StepFinished(rec)
}

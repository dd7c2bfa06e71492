package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/planrunner/runner/agents"
	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/engine"
	"github.com/planrunner/runner/replay"
)

// reuseFlags are `runner run --reuse OLD... [--offline]`.
type reuseFlags struct {
	from    stringList
	offline bool
	runs    []*board.Board
	u       *agents.Reuse
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// load reads the recordings to reuse and hands them to the agent set.
func (ru *reuseFlags) load(set *agents.Set, fs *flag.FlagSet, stderr io.Writer) int {
	if len(ru.from) == 0 {
		if ru.offline {
			return usageErr(stderr, fs, "--offline takes step results from the recordings given with --reuse: give at least one")
		}
		return exitOK
	}
	for _, p := range ru.from {
		b, err := board.Load(p)
		if err != nil {
			fmt.Fprintf(stderr, "runner run: --reuse %s: %v\n", p, err)
			return exitUsage
		}
		ru.runs = append(ru.runs, b)
	}
	ru.u = agents.NewReuse(ru.runs...)
	set.SetReuse(ru.u)
	return exitOK
}

// script serves command, test and apply_diff results from the reused
// recordings under --offline.
func (ru *reuseFlags) script(prog *engine.Program) engine.Script {
	if !ru.offline || len(ru.runs) == 0 {
		return nil
	}
	o := &offlineResults{runs: ru.runs, types: map[string]string{}}
	for _, s := range prog.Plan.AllSteps() {
		o.types[s.Label] = s.Type
	}
	return o
}

// report says, on stderr and in the run's file, how many calls and tokens
// were reused and how many went live.
func (ru *reuseFlags) report(b *board.Board, stderr io.Writer, g *globals) {
	if ru.u == nil {
		return
	}
	st := ru.u.Stats()
	from := make([]string, len(ru.from))
	for i, p := range ru.from {
		from[i], _ = filepath.Abs(p)
	}
	err := b.UpdateRun(func(r *board.Run) {
		r.Reused = &board.Reused{From: from, ReusedCalls: st.ReusedCalls, ReusedTokens: st.ReusedTokens,
			LiveCalls: st.LiveCalls, LiveTokens: st.LiveTokens}
	})
	if err == nil {
		err = b.Save()
	}
	if err != nil {
		fmt.Fprintf(stderr, "runner run: saving the reuse counts: %v\n", err)
	}
	if !g.quiet {
		fmt.Fprintf(stderr, "reused %d model calls (%d tokens) from the recording; %d went live (%d tokens)\n",
			st.ReusedCalls, st.ReusedTokens, st.LiveCalls, st.LiveTokens)
	}
}

// offlineResults is an engine.Script that only serves local steps' saved
// results, from the first reused run that has the step visit.
type offlineResults struct {
	runs  []*board.Board
	types map[string]string // the plan's step types by label
}

func (o *offlineResults) Result(label string, visit int) (board.StepRecord, bool) {
	if !replay.LocalTypes[o.types[label]] {
		return board.StepRecord{}, false
	}
	for _, b := range o.runs {
		var found *board.StepRecord
		steps := b.Steps()
		for i := range steps {
			if s := &steps[i]; s.Label == label && s.Visit == visit && replay.LocalTypes[s.Type] {
				found = s
			}
		}
		if found != nil && !engine.Interrupted(*found) {
			return *found, true
		}
	}
	return board.StepRecord{Label: label, Visit: visit, Status: engine.StatusFailed,
		Error: "--offline: no reused recording has a result for this step visit, and it is not run"}, true
}

func (o *offlineResults) Order(string, int) ([]string, bool) { return nil, false }
func (o *offlineResults) Canceled(string, int) engine.Cancel { return engine.NotCanceled }
func (o *offlineResults) Times(string, int) (time.Time, time.Time, bool) {
	return time.Time{}, time.Time{}, false
}
func (o *offlineResults) Clock(string, int, int) (time.Time, bool) { return time.Time{}, false }
func (o *offlineResults) Read(string, int, int) (engine.ReadSeen, bool) {
	return engine.ReadSeen{}, false
}
func (o *offlineResults) CutAfter(string, int) error { return nil }
func (o *offlineResults) Cut(string, int) error      { return nil }
func (o *offlineResults) Ends(string, int) bool      { return false }
func (o *offlineResults) EndsAfter(string, int) bool { return false }

package runs

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/replay"
)

// reuse are the saved runs Options.Reuse names, read.
type reuse struct {
	from    []string
	offline bool
	prog    *engine.Program
	runs    []*board.Board
	u       *agents.Reuse
}

// loadReuse reads the recordings to reuse; nil when there are none.
func loadReuse(from []string, offline bool, prog *engine.Program) (*reuse, error) {
	if len(from) == 0 {
		return nil, nil
	}
	ru := &reuse{from: from, offline: offline, prog: prog}
	for _, p := range from {
		b, err := board.Load(p)
		if err != nil {
			return nil, usage(fmt.Errorf("--reuse %s: %w", p, err))
		}
		ru.runs = append(ru.runs, b)
	}
	ru.u = agents.NewReuse(ru.runs...)
	return ru, nil
}

// script serves the results of the steps that touch the world
// (engine.ReplayWorld: command, test, apply_diff...) from the reused
// recordings when offline.
func (ru *reuse) script() engine.Script {
	if !ru.offline {
		return nil
	}
	// Types by the program, not the plan's labels: a for_each item, a
	// step of a block's item or of a callee ran for real under --offline.
	return &offlineResults{runs: ru.runs, caps: replay.StepCaps(ru.prog), types: ru.prog.Types}
}

// save writes in the run's file how many calls and tokens were reused and
// how many went live, and returns the counts.
func (ru *reuse) save(b *board.Board, warnings io.Writer) agents.ReuseStats {
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
		warn(warnings, "warning: saving the reuse counts: %v\n", err)
	}
	return st
}

// offlineResults is an engine.Script that only serves the saved results
// of steps that touch the world, from the first reused run that has the step visit.
type offlineResults struct {
	runs  []*board.Board
	caps  func(label string) engine.Caps // a step visit's type's (replay.StepCaps)
	types *engine.Registry               // a recorded type name's
}

func (o *offlineResults) Result(label string, visit int) (board.StepRecord, bool) {
	if o.caps(label).Replay != engine.ReplayWorld {
		return board.StepRecord{}, false
	}
	for _, b := range o.runs {
		var found *board.StepRecord
		steps := b.Steps()
		for i := range steps {
			if s := &steps[i]; s.Label == label && s.Visit == visit && s.Type != "" && o.types.Caps(s.Type).Replay == engine.ReplayWorld {
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

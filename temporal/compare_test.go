package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/steps"
	"github.com/rs/zerolog"
)

// newRun describes a run of src as `runner run` would.
func newRun(t testing.TB, src, workdir string) board.Run {
	t.Helper()
	prog, err := engine.Compile("plan.yaml", []byte(src), steps.Registry())
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	vars, err := engine.ResolveVars(prog.Plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	return board.Run{ID: board.NewID(now), PlanPath: "plan.yaml", PlanSHA256: prog.Plan.SHA256,
		PlanSource: src, Vars: vars, Workdir: workdir, Status: board.StatusRunning, StartedAt: now}
}

// inProcess runs src with the root engine, as `runner run` does.
func inProcess(t testing.TB, src string) (*board.Board, error) {
	t.Helper()
	dir := t.TempDir()
	run := newRun(t, src, dir)
	prog, _ := engine.Compile("plan.yaml", []byte(src), steps.Registry())
	b := board.New(run)
	r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: dir, Vars: run.Vars,
		Sleep: func(context.Context, time.Duration) error { return nil }}
	return b, r.Run(context.Background())
}

// stepView is a step record as a replay compares it: durations, times and
// retry delays (drawn at random) set aside.
func stepView(s board.StepRecord) string {
	var res map[string]any
	_ = json.Unmarshal(s.Result, &res)
	delete(res, "duration_ms")
	r, _ := json.Marshal(res)
	return fmt.Sprintf("%s#%d type=%s parent=%s status=%s goto=%s attempts=%d delays=%d error=%q result=%s",
		s.Label, s.Visit, s.Type, s.Parent, s.Status, s.Goto, s.Attempts, len(s.Delays), s.Error, r)
}

// sameSteps says how two runs' step records differ: the top-level order
// must be the same; a parallel group's children may finish in any order.
func sameSteps(a, b []board.StepRecord) string {
	view := func(list []board.StepRecord) (top, all []string) {
		for _, s := range list {
			v := stepView(s)
			all = append(all, v)
			if s.Parent == "" {
				top = append(top, v)
			}
		}
		sort.Strings(all)
		return top, all
	}
	ta, aa := view(a)
	tb, ab := view(b)
	if d := firstDiff(ta, tb); d != "" {
		return "top-level steps: " + d
	}
	return firstDiff(aa, ab)
}

func firstDiff(a, b []string) string {
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("record %d:\n  in-process: %s\n  temporal:   %s", i, x, y)
		}
	}
	return ""
}

// entryView is an entry with its id, seq and time set aside.
func entriesView(b *board.Board) []string {
	var out []string
	for _, e := range b.Entries() {
		c, _ := json.Marshal(e.Content)
		m, _ := json.Marshal(e.Meta)
		out = append(out, fmt.Sprintf("%s/%s/%s/%s key=%s v%d deleted=%v %s %s", e.Section, e.Role, e.Author, e.Label, e.Key, e.Version, e.Deleted, c, m))
	}
	sort.Strings(out)
	return out
}

func runSummary(b *board.Board) string {
	var out []string
	for _, s := range b.Steps() {
		out = append(out, s.Label+":"+s.Status)
	}
	return strings.Join(out, " ")
}

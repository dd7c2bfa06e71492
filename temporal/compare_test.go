package temporal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
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

// perRunFields names the fields of blackboard.json that two runs of one plan
// may hold different values in whatever the engine, with why: every
// comparison of two runs sets these aside and compares every other field
// (a field added to the format is compared until it is named here).
var perRunFields = []struct{ where, field, why string }{
	{"run", "id", "a new id for every run"},
	{"run", "started_at", "wall-clock time"},
	{"run", "finished_at", "wall-clock time"},
	{"run", "workdir", "each run has a directory of its own (its path, in any other field, reads $WORKDIR)"},
	{"run", "plan_path", "as the command line named the plan (the tests' in-process runs name it plan.yaml)"},
	{"run", "runner_version", "the build that ran it (a test's in-process run is no build)"},
	{"step", "started_at", "wall-clock time"},
	{"step", "finished_at", "wall-clock time"},
	{"step", "duration_ms", "how long the step took"},
	{"step", "retry_delays_ms", "drawn at random for each run: compared by count"},
	{"step", "host", "which host ran the step (a run in process has none)"},
	{"result", "duration_ms", "how long the step took"},
	{"entry", "id", "a new id for every entry"},
	{"entry", "seq", "the order parallel steps finished in is a race"},
	{"entry", "ts", "wall-clock time"},
	{"clock recording", "response", "the wall-clock time a step read (a replay serves it back)"},
}

// onlyInProcess are the kinds of recordings only a run in process makes:
// it stops at an input step and is resumed once answered (each resume
// recorded), where a run on Temporal waits for the answer.
var onlyInProcess = []string{engine.KindResume}

// perRunOf lists the fields perRunFields sets aside in one place.
func perRunOf(where string) []string {
	var out []string
	for _, f := range perRunFields {
		if f.where == where {
			out = append(out, f.field)
		}
	}
	return out
}

// jsonView is v as JSON with the per-run fields of where (and of its
// result, for a step) set aside and the run's workdir written $WORKDIR.
func jsonView(v any, where, workdir string) string {
	raw, _ := json.Marshal(v)
	if workdir != "" {
		quoted, _ := json.Marshal(workdir)
		raw = bytes.ReplaceAll(raw, quoted[1:len(quoted)-1], []byte("$WORKDIR"))
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return string(raw)
	}
	if d, ok := m["retry_delays_ms"].([]any); ok && where == "step" {
		m["retry_delays"] = len(d)
	}
	for _, f := range perRunOf(where) {
		delete(m, f)
	}
	if res, ok := m["result"].(map[string]any); ok && where == "step" {
		for _, f := range perRunOf("result") {
			delete(res, f)
		}
	}
	out, _ := json.Marshal(m)
	return string(out)
}

// stepView is a step record as two runs compare it: every field but the
// per-run ones.
func stepView(s board.StepRecord, workdir string) string {
	return s.Label + "#" + fmt.Sprint(s.Visit) + " " + jsonView(s, "step", workdir)
}

// sameSteps says how two runs' step records differ: the top-level order
// must be the same; a parallel group's children may finish in any order.
func sameSteps(a, b []board.StepRecord) string { return sameStepsIn(a, "", b, "") }

// sameStepsIn is sameSteps for runs in the workdirs wa and wb.
func sameStepsIn(a []board.StepRecord, wa string, b []board.StepRecord, wb string) string {
	view := func(list []board.StepRecord, wd string) (top, all []string) {
		for _, s := range list {
			v := stepView(s, wd)
			all = append(all, v)
			if s.Parent == "" {
				top = append(top, v)
			}
		}
		sort.Strings(all)
		return top, all
	}
	ta, aa := view(a, wa)
	tb, ab := view(b, wb)
	if d := firstDiff(ta, tb); d != "" {
		return "top-level steps: " + d
	}
	return firstDiff(aa, ab)
}

// recordingsOf are a run's recordings, every field, sorted, but those
// of the kinds left out.
func recordingsOf(b *board.Board, workdir string, leftOut ...string) []string {
	var out []string
	for _, r := range b.Recordings() {
		if slices.Contains(leftOut, r.Kind) {
			continue
		}
		where := "recording"
		if r.Kind == "clock" {
			where = "clock recording"
		}
		out = append(out, jsonView(r, where, workdir))
	}
	sort.Strings(out)
	return out
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

// entriesView are a run's entries, every field but the per-run ones,
// sorted.
func entriesView(b *board.Board) []string { return entriesViewIn(b.Entries(), "") }

func entriesViewIn(es []board.Entry, workdir string) []string {
	var out []string
	for _, e := range es {
		out = append(out, jsonView(e, "entry", workdir))
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

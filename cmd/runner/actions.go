package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/testrun"
	"github.com/planrunner/runner/internal/view/ghactions"
	"github.com/planrunner/runner/internal/view/junit"
	"github.com/planrunner/runner/internal/view/report"
)

// onActions reports whether runner runs as a GitHub Actions step.
func onActions() bool { return ghactions.Enabled(os.Getenv) }

// useColor says whether to colour what runner prints: NO_COLOR wins
// (no-color.org); FORCE_COLOR (0 or false: off) and CLICOLOR_FORCE force
// it anywhere; GitHub Actions' log shows colour though it is no terminal;
// else only on a terminal.
func useColor(tty bool) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	if v, ok := os.LookupEnv("FORCE_COLOR"); ok {
		return v != "0" && !strings.EqualFold(v, "false")
	}
	if v := os.Getenv("CLICOLOR_FORCE"); v != "" && v != "0" {
		return true
	}
	return tty || onActions()
}

// maxSummarySteps bounds the step rows of the Markdown summary (GitHub
// takes at most 1 MiB per step summary; a for_each over 10,000 items
// would pass it).
const maxSummarySteps = 200

// maxAnnotations bounds the annotations of one run: GitHub shows at most
// 10 errors per step, so more would only lengthen the log.
const maxAnnotations = 50

// actionsFinish tells GitHub Actions how a run ended: an annotation for
// each failed test, build error and failed step (its last visit), and the
// Markdown summary appended to $GITHUB_STEP_SUMMARY.
func actionsFinish(gh *ghactions.Stream, r *runs.Result, elapsed time.Duration, reportPath string, g *globals, stderr io.Writer) {
	b := r.Board
	anns := annotations(b, actionsRoot())
	var lines []string
	for i, a := range anns {
		if i == maxAnnotations {
			lines = append(lines, ghactions.Annotation{Level: "warning",
				Message: fmt.Sprintf("%d more failures: see the run summary or the report", len(anns)-maxAnnotations)}.String())
			break
		}
		lines = append(lines, a.Map(g.mask.String).String())
	}
	if len(lines) > 0 {
		gh.Commands(lines...)
	}
	path := os.Getenv("GITHUB_STEP_SUMMARY")
	if path == "" {
		return
	}
	s := summaryOf(r, anns, elapsed, reportPath)
	if err := ghactions.AppendSummary(path, g.mask.String(s.Map(g.mask.String).Markdown())); err != nil {
		fmt.Fprintf(stderr, "runner: %v\n", err)
	}
}

// actionsRoot is what annotation paths are relative to: the workspace
// Actions checked out, else the current directory.
func actionsRoot() string {
	if w := os.Getenv("GITHUB_WORKSPACE"); w != "" {
		return w
	}
	wd, _ := os.Getwd()
	return wd
}

// relTo is p relative to root when inside it, else p as it is.
func relTo(root, p string) string {
	if p == "" || root == "" {
		return p
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return filepath.ToSlash(rel)
}

// lastVisits are the step records that count for a run's verdict: each
// label's last visit (a test that failed and passed on a later visit of
// a fix loop is fixed).
func lastVisits(recs []board.StepRecord) []board.StepRecord {
	last := map[string]int{}
	for i, s := range recs {
		last[s.Label] = i
	}
	var out []board.StepRecord
	for i, s := range recs {
		if last[s.Label] == i {
			out = append(out, s)
		}
	}
	return out
}

// annotations are the failures of a run's last visits: each failed test
// and build error at its file and line, each other failed step (a refused
// diff, a command) at its line in the plan; a parallel group's failure is
// its child's, told there. A failure the plan tolerates (continue_on_error
// on the step or its group) is a warning whose title says "(tolerated)",
// as the JUnit document (junit.Tolerated) and the summary say it.
func annotations(b *board.Board, root string) []ghactions.Annotation {
	run := b.Run()
	planFile := relTo(root, run.PlanPath)
	stepLine := map[string]int{}
	// The plan as the run saved it, parsed again for its lines: a compiled
	// plan has let go of its YAML tree.
	if p, err := plans.Parse(run.PlanPath, []byte(run.PlanSource)); err == nil {
		for _, s := range p.AllSteps() {
			if s.Node != nil {
				stepLine[s.Label] = s.Node.Line
			}
		}
	}
	tol := junit.Tolerated(b)
	recs := b.Steps()
	names := junit.NamesOf(recs)
	failedKid := map[string]bool{}
	for _, rec := range recs {
		if rec.Parent != "" && rec.Status == board.StatusFailed {
			failedKid[rec.Parent] = true
		}
	}
	types := steps.Registry()
	var out []ghactions.Annotation
	for _, rec := range lastVisits(recs) {
		if rec.Status != board.StatusFailed || rec.Type == "" && failedKid[rec.Label] {
			continue
		}
		level, mark := "error", ""
		if junit.IsTolerated(tol, rec.Label) {
			level, mark = "warning", " (tolerated)"
		}
		at := func(dir, file string) string { return junit.RepoPath(root, run.Workdir, dir, file) }
		who := names.Of(rec.Label, rec.Visit)
		shows := types.Caps(rec.Type).Shows
		if shows.Has(engine.ShowsTests) {
			var tr testrun.Result
			if json.Unmarshal(rec.Result, &tr) == nil && len(tr.Failures)+len(tr.BuildErrors) > 0 {
				dir := rec.Inputs["dir"]
				for _, f := range tr.Failures {
					msg := f.Message
					if f.Excerpt != "" && f.Excerpt != msg {
						msg += "\n" + f.Excerpt
					}
					out = append(out, ghactions.Annotation{Level: level, File: at(dir, f.File), Line: f.Line,
						Title: fmt.Sprintf("%s: %s %s%s", who, f.ID, kindWord(f.Kind), mark), Message: msg})
				}
				for _, e := range tr.BuildErrors {
					out = append(out, ghactions.Annotation{Level: level, File: at(dir, e.File), Line: e.Line, Col: e.Col,
						Title: who + ": build error" + mark, Message: e.Message})
				}
				continue
			}
		}
		title := fmt.Sprintf("step %s (%s) failed%s", who, rec.Type, mark)
		if rec.Type == "" {
			title = fmt.Sprintf("step %s failed%s", who, mark)
		}
		if shows.Has(engine.ShowsEdit) {
			title = fmt.Sprintf("step %s: the diff was not applied%s", who, mark)
		}
		msg := rec.Error
		if msg == "" {
			msg = "failed"
		}
		out = append(out, ghactions.Annotation{Level: level, File: planFile, Line: stepLine[engine.BaseLabel(rec.Label)], Title: title, Message: msg})
	}
	return out
}

// kindWord is a test failure's kind as the title says it.
func kindWord(kind string) string {
	switch kind {
	case testrun.KindPanic:
		return "panicked"
	case testrun.KindTimeout:
		return "timed out"
	case testrun.KindError:
		return "errored"
	}
	return "failed"
}

// summaryOf is the run's Markdown summary.
func summaryOf(r *runs.Result, anns []ghactions.Annotation, elapsed time.Duration, reportPath string) ghactions.Summary {
	b := r.Board
	run := b.Run()
	s := ghactions.Summary{Run: run.ID, Status: r.Status(), Plan: filepath.Base(run.PlanPath),
		Duration: elapsed.Round(time.Millisecond).String(), Report: reportPath, Blackboard: b.Path()}
	if r.Err != nil {
		s.Error = firstLine(r.Err.Error())
	}
	tol := junit.Tolerated(b)
	recs := b.Steps()
	names := junit.NamesOf(recs)
	for i, st := range recs {
		if i == maxSummarySteps {
			s.Steps = append(s.Steps, ghactions.SummaryStep{Name: fmt.Sprintf("… and %d more step visits (see the report)", len(recs)-i)})
			break
		}
		status := st.Status
		if status == board.StatusFailed && junit.IsTolerated(tol, st.Label) {
			status = "failed (tolerated)"
		}
		s.Steps = append(s.Steps, ghactions.SummaryStep{Name: names.Of(st.Label, st.Visit), Type: st.Type, Status: status, Duration: ms(st.DurationMS)})
	}
	for _, a := range anns {
		place := a.File
		if place != "" && a.Line > 0 {
			place = fmt.Sprintf("%s:%d", a.File, a.Line)
		}
		s.Failures = append(s.Failures, ghactions.SummaryFailure{Step: a.Title, Place: place, Message: firstLine(a.Message),
			Tolerated: a.Level == "warning"})
	}
	var total float64
	for _, t := range report.Tokens(b.RecordingsKeyed()) {
		cost := ""
		if t.CostUSD > 0 {
			cost = board.FormatUSD(t.CostUSD)
		}
		total += t.CostUSD
		s.Tokens = append(s.Tokens, ghactions.SummaryTokens{Model: t.Model, Calls: t.Calls, InputTokens: t.InputTokens, Output: t.OutputTokens, Cost: cost})
	}
	if len(s.Tokens) > 0 {
		s.Cost = board.FormatUSD(total)
	}
	return s
}

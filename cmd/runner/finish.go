package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/safefs"
	"github.com/planrunner/runner/internal/view/junit"
	"github.com/planrunner/runner/internal/view/report"
)

// lastOutputLines bounds the last step's output shown at the end of a run.
const lastOutputLines = 20

// finish tells how a run ended: on the console the last step's output,
// the steps that never ran, tokens per model, the outcome and the command
// to type next; with JSON logs one "run finished" event saying the same;
// on stdout the blackboard's path (bare with -q).
func finish(r *runs.Result, start time.Time, stdout, stderr io.Writer, g *globals) {
	b, err := r.Board, r.Err
	run := b.Run()
	status := r.Status()
	elapsed := time.Since(start)
	path := b.Path()
	var reportPath string
	var reportErr error
	if g.report {
		reportPath, reportErr = writeReport(b, path, "")
	}
	if g.junit != "" {
		// Files relative to the root the annotations use, so that both
		// name the same file alike.
		doc := junit.FromBoardAt(b, steps.Registry(), actionsRoot())
		if err := safefs.WriteOutput(g.junit, board.FileMode, func(w io.Writer) error { return junit.Write(w, doc) }); err != nil && reportErr == nil {
			reportErr = fmt.Errorf("--junit: %w", err)
		}
	}
	// Keyed: the token sums skip the answers' texts, which need not be
	// built into JSON again.
	tokens := report.Tokens(b.RecordingsKeyed())
	var waiting []board.WaitingInput
	if ws := b.Run().Waiting; len(ws) > 0 {
		waiting = unanswered(ws, b.Recordings())
	}
	next := nextCommands(path, status, reportPath, waiting)

	if g.format(stderr) == "json" {
		ev := r.Log.Info()
		switch {
		case status == board.StatusWaiting:
			ev = r.Log.Warn() // a question for a person, not a failure
		case err != nil:
			ev = r.Log.Error().Str("error", err.Error())
		}
		ev = ev.Str("status", status).Int64("duration_ms", elapsed.Milliseconds()).Str("blackboard", path)
		if len(tokens) > 0 {
			ev = ev.Interface("tokens", tokens)
		}
		if r.Agents != nil {
			if sp := r.Agents.Spend(b); len(sp) > 0 {
				ev = ev.Interface("spend", sp)
			}
		}
		if reportPath != "" {
			ev = ev.Str("report", reportPath)
		}
		if reportErr != nil {
			ev = ev.Str("report_error", reportErr.Error())
		}
		if len(next) > 0 {
			ev = ev.Strs("next", next)
		}
		ev.Msg("run finished")
	} else {
		w := g.mask.Writer(stderr)
		if !g.quiet {
			summary(w, r, run.ID, status, err, elapsed, tokens, g.gh != nil)
			for _, wi := range waiting {
				fmt.Fprintf(w, "%s asks: %s\n", name(wi.Label, wi.Visit), strings.TrimSpace(wi.Prompt))
			}
			for i, n := range next {
				label := "next:  "
				if i > 0 {
					label = "       "
				}
				fmt.Fprintf(w, "%s%s\n", label, n)
			}
		} else if err != nil {
			fmt.Fprintf(w, "error: %v\n", err)
		}
		if reportErr != nil {
			fmt.Fprintf(w, "report: %v\n", reportErr)
		}
	}
	if g.gh != nil {
		actionsFinish(g.gh, r, elapsed, reportPath, g, stderr)
	}
	if g.quiet {
		fmt.Fprintln(stdout, path)
		return
	}
	fmt.Fprintf(stdout, "blackboard: %s\n", path)
}

// summary is the end of the console display. grouped: each step's output
// is in its log group already (GitHub Actions), so the last one is not
// told again.
func summary(w io.Writer, r *runs.Result, id, status string, err error, elapsed time.Duration, tokens []report.ModelUsage, grouped bool) {
	steps := r.Board.StepsKeyed() // labels only
	ran := map[string]bool{}
	for _, s := range steps {
		ran[s.Label] = true
	}
	for _, w := range r.Board.Run().Waiting {
		ran[w.Label] = true // it asked; its line below says what
	}
	var never []string
	for _, s := range r.Prog.Plan.AllSteps() {
		if !ran[s.Label] {
			never = append(never, s.Label)
		}
	}
	if len(never) > 0 {
		fmt.Fprintf(w, "never ran: %s\n", strings.Join(never, ", "))
	}
	if last, out := lastOutput(steps); out != "" && !grouped {
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		more := ""
		if len(lines) > lastOutputLines {
			more = fmt.Sprintf(" (last %d of %d lines)", lastOutputLines, len(lines))
			lines = lines[len(lines)-lastOutputLines:]
		}
		fmt.Fprintf(w, "\noutput of %s%s:\n", name(last.Label, last.Visit), more)
		for _, l := range lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
		fmt.Fprintln(w)
	}
	for _, t := range tokens {
		cost := ""
		if t.CostUSD > 0 || t.PriceKnown {
			cost = ", " + board.FormatUSD(t.CostUSD)
		}
		in, out := fmt.Sprintf("%d in", t.InputTokens), fmt.Sprintf("%d out", t.OutputTokens)
		if t.CacheReadTokens+t.CacheWriteTokens > 0 {
			in += fmt.Sprintf(" (%d cached, %d written to the cache)", t.CacheReadTokens, t.CacheWriteTokens)
		}
		if t.ReasoningTokens > 0 {
			out += fmt.Sprintf(" (%d reasoning)", t.ReasoningTokens)
		}
		fmt.Fprintf(w, "tokens: %s %s, %s (%d calls%s)\n", t.Model, in, out, t.Calls, cost)
	}
	if r.Agents != nil {
		printSpend(w, r.Agents.Spend(r.Board)) // cost per agent
	}
	line := fmt.Sprintf("run %s %s in %s", id, status, elapsed.Round(time.Millisecond))
	var re *engine.RunError
	switch {
	case err == nil:
	case errors.As(err, &re) && re.Label != "" && shownFailure(steps, re):
		line += " at step " + re.Label // its line above says why
	default:
		line += ": " + err.Error()
	}
	fmt.Fprintln(w, line)
}

// shownFailure reports whether the step that ended the run failed with
// its own error, which the display already showed.
func shownFailure(steps []board.StepRecord, re *engine.RunError) bool {
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Label == re.Label {
			return steps[i].Error != "" && strings.Contains(re.Err.Error(), firstLine(steps[i].Error))
		}
	}
	return false
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// lastOutput is the output of the last top-level step that had one; a
// step whose output is only where the run went (engine.ShowsRoute: a
// branch) has none.
func lastOutput(recs []board.StepRecord) (board.StepRecord, string) {
	types := steps.Registry()
	for i := len(recs) - 1; i >= 0; i-- {
		s := recs[i]
		if s.Parent != "" || len(s.Result) == 0 || types.Caps(s.Type).Shows.Has(engine.ShowsRoute) {
			continue
		}
		var res struct {
			Output any `json:"output"`
		}
		if json.Unmarshal(s.Result, &res) == nil && res.Output != nil {
			if onlyBlanks(res.Output) {
				return board.StepRecord{}, "" // an earlier step's would read as this one's
			}
			if out := engine.Text(res.Output); strings.TrimSpace(out) != "" {
				return s, out
			}
		}
	}
	return board.StepRecord{}, ""
}

// onlyBlanks says whether v is a list of nothing but nulls and empty
// strings: the output of a for_each whose items printed nothing or were
// canceled, which says nothing worth a line each.
func onlyBlanks(v any) bool {
	list, ok := v.([]any)
	if !ok {
		return false
	}
	for _, x := range list {
		if x != nil && x != "" {
			return false
		}
	}
	return true
}

// nextCommands are what to type next: resume for a run that did not
// succeed, and the report.
// unanswered are the waiting inputs no one has answered yet (an input can
// be answered while its run still runs; the run takes it on resume).
func unanswered(ws []board.WaitingInput, recs []board.Recording) []board.WaitingInput {
	var out []board.WaitingInput
	for _, w := range ws {
		if _, ok := steps.FindAnswer(recs, w.Label, w.Visit); !ok {
			out = append(out, w)
		}
	}
	return out
}

func nextCommands(path, status, reportPath string, waiting []board.WaitingInput) []string {
	q := engine.ShellQuote(path)
	var out []string
	if status == board.StatusWaiting {
		for _, w := range waiting {
			out = append(out, runs.AnswerCommand(q, w))
		}
	}
	if status != board.StatusSucceeded {
		out = append(out, "runner resume "+q)
	}
	if reportPath != "" {
		out = append(out, "open "+engine.ShellQuote(reportPath))
	} else {
		out = append(out, "runner report "+q)
	}
	return out
}

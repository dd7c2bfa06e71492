// Package eval compares recorded runs: one run with a golden one, step
// visit by step visit (`runner eval RUN --baseline GOLDEN`), and a set of
// runs as figures per agent and model (`runner eval RUN...`). It reads
// only the saved boards, so runs made with other models (a fork) compare
// like any others. What it shows of a step (tests passed, files an edit
// changed) it finds by the kinds of result the step's type has
// (engine.Caps.Shows), asked of the types it is given by name.
//
// It imports board and engine (for the types' Caps); nothing that runs
// a plan.
package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
)

// Comparison is a run against its baseline.
type Comparison struct {
	Run      string `json:"run"`
	Baseline string `json:"baseline"`
	// Verdict: "same" (every step visit ended the same way, outputs and
	// diffs equal), "different" (outputs, diffs or figures differ, nothing
	// got worse), or "regressed" (a step or test that passed in the
	// baseline does not now, or the run no longer succeeds).
	Verdict     string   `json:"verdict"`
	Regressions []string `json:"regressions"`
	RunStatus   string   `json:"run_status"`
	BaseStatus  string   `json:"baseline_status"`
	Steps       []Row    `json:"steps"`
	Totals      Figures  `json:"totals"`
	BaseTotals  Figures  `json:"baseline_totals"`
}

// Row is one step visit in both runs.
type Row struct {
	Step       string   `json:"step"`
	Type       string   `json:"type"`
	Baseline   *Visit   `json:"baseline"` // nil: the visit is not in the baseline
	Run        *Visit   `json:"run"`      // nil: the run did not make it
	SameOutput bool     `json:"same_output"`
	SameDiff   bool     `json:"same_diff"`
	Regressed  bool     `json:"regressed"`
	Notes      []string `json:"notes"`
}

// Visit is what one step visit did.
type Visit struct {
	Status string `json:"status"`
	Output string `json:"-"`
	// Tests: passed/total for a test step ("" for other steps).
	Tests       string `json:"tests,omitempty"`
	testsPassed int
	testsFailed int
	Diff        string `json:"diff,omitempty"`  // the files an apply_diff changed, e.g. "modify a.go +3 -1"
	Model       string `json:"model,omitempty"` // the model that answered (a model step)
	Figures
}

// Figures are what a step or a run used.
type Figures struct {
	CostUSD    float64 `json:"cost_usd"`
	Tokens     int     `json:"tokens"`
	DurationMS int64   `json:"duration_ms"`
}

// Compare compares run with baseline, step visit by step visit (a step's
// nth visit with the baseline's nth). types say what each step's type
// shows (nil: nothing more than a step).
func Compare(run, baseline *board.Board, types *engine.Registry) Comparison {
	visitOf := func(r board.StepRecord) Visit { return visitOf(r, types.Caps(r.Type).Shows) }
	c := Comparison{Run: run.Run().ID, Baseline: baseline.Run().ID, RunStatus: run.Run().Status,
		BaseStatus: baseline.Run().Status, Regressions: []string{}, Steps: []Row{}}
	type key struct {
		label string
		visit int
	}
	base := map[key]board.StepRecord{}
	var order []key
	for _, r := range baseline.Steps() {
		k := key{r.Label, r.Visit}
		base[k] = r
		order = append(order, k)
		c.BaseTotals.add(visitOf(r).Figures)
	}
	seen := map[key]bool{}
	rows := map[key]*Row{}
	for _, r := range run.Steps() {
		k := key{r.Label, r.Visit}
		seen[k] = true
		v := visitOf(r)
		c.Totals.add(v.Figures)
		row := &Row{Step: name(r.Label, r.Visit), Type: r.Type, Run: &v, Notes: []string{}}
		if b, ok := base[k]; ok {
			bv := visitOf(b)
			row.Baseline = &bv
		} else {
			order = append(order, k)
		}
		rows[k] = row
	}
	for _, k := range order {
		row := rows[k]
		if row == nil {
			b := base[k]
			bv := visitOf(b)
			row = &Row{Step: name(k.label, k.visit), Type: b.Type, Baseline: &bv, Notes: []string{}}
		}
		row.judge()
		if row.Regressed {
			c.Regressions = append(c.Regressions, row.Step+": "+strings.Join(row.Notes, "; "))
		}
		c.Steps = append(c.Steps, *row)
	}
	if c.BaseStatus == board.StatusSucceeded && c.RunStatus != board.StatusSucceeded {
		c.Regressions = append(c.Regressions, fmt.Sprintf("the run %s; the baseline succeeded", c.RunStatus))
	}
	c.Verdict = "same"
	for _, r := range c.Steps {
		if !r.SameOutput || !r.SameDiff || r.Baseline == nil || r.Run == nil || r.Baseline.Status != r.Run.Status {
			c.Verdict = "different"
		}
	}
	if c.RunStatus != c.BaseStatus {
		c.Verdict = "different"
	}
	if len(c.Regressions) > 0 {
		c.Verdict = "regressed"
	}
	return c
}

// judge fills a row's verdict: what differs, and whether it got worse.
func (r *Row) judge() {
	b, v := r.Baseline, r.Run
	switch {
	case b == nil:
		r.Notes = append(r.Notes, "not in the baseline")
		return
	case v == nil:
		r.Notes = append(r.Notes, "the run did not get here")
		r.Regressed = b.Status == board.StatusSucceeded
		return
	}
	r.SameOutput = b.Output == v.Output
	r.SameDiff = b.Diff == v.Diff
	if b.Status != v.Status {
		r.Notes = append(r.Notes, fmt.Sprintf("%s, was %s", v.Status, b.Status))
		if b.Status == board.StatusSucceeded {
			r.Regressed = true
		}
	}
	if b.Tests != "" || v.Tests != "" {
		if v.testsPassed < b.testsPassed || v.testsFailed > b.testsFailed {
			r.Regressed = true
		}
		if b.Tests != v.Tests {
			r.Notes = append(r.Notes, fmt.Sprintf("tests %s, were %s", v.Tests, b.Tests))
		}
	}
	if b.Model != v.Model {
		r.Notes = append(r.Notes, fmt.Sprintf("model %s, was %s", v.Model, b.Model))
	}
	if !r.SameOutput {
		r.Notes = append(r.Notes, "output differs")
	}
	if !r.SameDiff {
		r.Notes = append(r.Notes, fmt.Sprintf("diff %q, was %q", v.Diff, b.Diff))
	}
}

func (f *Figures) add(g Figures) {
	f.CostUSD += g.CostUSD
	f.Tokens += g.Tokens
	f.DurationMS += g.DurationMS
}

// visitOf reads what a step record says, as its type shows.
func visitOf(r board.StepRecord, sh engine.Shows) Visit {
	v := Visit{Status: r.Status}
	v.DurationMS = r.DurationMS
	var res struct {
		Output json.RawMessage `json:"output"`
		Model  string          `json:"model"`
		Usage  *struct {
			InputTokens  int     `json:"input_tokens"`
			OutputTokens int     `json:"output_tokens"`
			CostUSD      float64 `json:"cost_usd"`
		} `json:"usage"`
		Outcome string `json:"outcome"`
		Counts  *struct {
			Total  int `json:"total"`
			Passed int `json:"passed"`
			Failed int `json:"failed"`
		} `json:"counts"`
		Files []struct {
			Path    string `json:"path"`
			Op      string `json:"op"`
			Added   int    `json:"added"`
			Removed int    `json:"removed"`
		} `json:"files"`
	}
	json.Unmarshal(r.Result, &res)
	v.Output, v.Model = string(res.Output), res.Model
	if res.Usage != nil {
		v.Tokens = res.Usage.InputTokens + res.Usage.OutputTokens
		v.CostUSD = res.Usage.CostUSD
	}
	if sh.Has(engine.ShowsTests) && res.Counts != nil {
		v.testsPassed, v.testsFailed = res.Counts.Passed, res.Counts.Failed
		v.Tests = fmt.Sprintf("%d/%d", res.Counts.Passed, res.Counts.Total)
	}
	if sh.Has(engine.ShowsEdit) {
		var fs []string
		for _, f := range res.Files {
			fs = append(fs, fmt.Sprintf("%s %s +%d -%d", f.Op, f.Path, f.Added, f.Removed))
		}
		sort.Strings(fs)
		v.Diff = strings.Join(fs, ", ")
	}
	return v
}

func name(label string, visit int) string {
	if visit > 1 {
		return fmt.Sprintf("%s#%d", label, visit)
	}
	return label
}

// Table prints the comparison for a person: a row per step visit, then
// the totals and the verdict.
func (c Comparison) Table(w io.Writer) {
	fmt.Fprintf(w, "run %s against baseline %s\n\n", c.Run, c.Baseline)
	rows := [][]string{{"step", "type", "baseline", "run", "tests", "cost", "tokens", "duration", "notes"}}
	for _, r := range c.Steps {
		rows = append(rows, []string{r.Step, r.Type, status(r.Baseline), status(r.Run), pair(r.Baseline, r.Run, func(v *Visit) string { return v.Tests }),
			pair(r.Baseline, r.Run, func(v *Visit) string { return board.FormatUSD(v.CostUSD) }),
			pair(r.Baseline, r.Run, func(v *Visit) string { return fmt.Sprint(v.Tokens) }),
			pair(r.Baseline, r.Run, func(v *Visit) string { return fmt.Sprintf("%dms", v.DurationMS) }),
			mark(r) + strings.Join(r.Notes, "; ")})
	}
	rows = append(rows, []string{"total", "", c.BaseStatus, c.RunStatus, "", board.FormatUSD(c.BaseTotals.CostUSD) + " → " + board.FormatUSD(c.Totals.CostUSD),
		fmt.Sprintf("%d → %d", c.BaseTotals.Tokens, c.Totals.Tokens), fmt.Sprintf("%dms → %dms", c.BaseTotals.DurationMS, c.Totals.DurationMS), ""})
	table(w, rows)
	fmt.Fprintf(w, "\nverdict: %s\n", c.Verdict)
	for _, r := range c.Regressions {
		fmt.Fprintf(w, "  regressed: %s\n", r)
	}
}

func mark(r Row) string {
	if r.Regressed {
		return "REGRESSED "
	}
	return ""
}

func status(v *Visit) string {
	if v == nil {
		return "-"
	}
	return v.Status
}

// pair is "baseline → run", or the one value when both say the same.
func pair(b, r *Visit, f func(*Visit) string) string {
	bs, rs := "-", "-"
	if b != nil {
		bs = f(b)
	}
	if r != nil {
		rs = f(r)
	}
	if bs == rs {
		return rs
	}
	return bs + " → " + rs
}

// table prints rows with aligned columns.
func table(w io.Writer, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			if n := len([]rune(c)); n > widths[i] {
				widths[i] = n
			}
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-len([]rune(c))+2))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

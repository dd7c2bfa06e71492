package ghactions

import (
	"fmt"
	"os"
	"strings"

	"github.com/planrunner/runner/internal/view/mdtext"
)

// Summary is what the run's Markdown summary says.
type Summary struct {
	Run, Status, Plan, Duration string
	Error                       string // how the run ended, when it did not succeed
	Steps                       []SummaryStep
	Failures                    []SummaryFailure
	Tokens                      []SummaryTokens
	Cost                        string // total, "" when no model was called
	Report                      string // the HTML report's path, "" when none was written
	Blackboard                  string
}

// SummaryStep is one step visit's row.
type SummaryStep struct{ Name, Type, Status, Duration string }

// SummaryFailure is a failed test or a refused diff: where and why, and
// whether the plan tolerated it (it did not fail the run).
type SummaryFailure struct {
	Step, Place, Message string
	Tolerated            bool
}

// SummaryTokens is one model's use.
type SummaryTokens struct {
	Model                      string
	Calls, InputTokens, Output int
	Cost                       string
}

// Map returns s with f applied to every text in it: the CLI masks
// secrets with it before Markdown escapes them, since a secret escaped
// ("sk\_live") no longer matches the mask.
func (s Summary) Map(f func(string) string) Summary {
	s.Run, s.Status, s.Plan, s.Duration, s.Error = f(s.Run), f(s.Status), f(s.Plan), f(s.Duration), f(s.Error)
	s.Cost, s.Report, s.Blackboard = f(s.Cost), f(s.Report), f(s.Blackboard)
	steps := make([]SummaryStep, len(s.Steps))
	for i, st := range s.Steps {
		steps[i] = SummaryStep{Name: f(st.Name), Type: f(st.Type), Status: f(st.Status), Duration: f(st.Duration)}
	}
	fails := make([]SummaryFailure, len(s.Failures))
	for i, x := range s.Failures {
		fails[i] = SummaryFailure{Step: f(x.Step), Place: f(x.Place), Message: f(x.Message), Tolerated: x.Tolerated}
	}
	toks := make([]SummaryTokens, len(s.Tokens))
	for i, x := range s.Tokens {
		x.Model, x.Cost = f(x.Model), f(x.Cost)
		toks[i] = x
	}
	s.Steps, s.Failures, s.Tokens = steps, fails, toks
	return s
}

// Markdown renders the summary. Every value goes through mdtext (Text,
// or Code for ids and paths): a step's name or a model's message shows
// as written and cannot add a link (bare URLs included), an image,
// HTML, a list, a row or a cell.
func (s Summary) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## runner: %s %s\n\n", mdtext.Text(s.Plan), mdtext.Text(s.Status))
	fmt.Fprintf(&b, "Run %s, %s.", mdtext.Code(s.Run), mdtext.Text(s.Duration))
	if s.Error != "" {
		fmt.Fprintf(&b, " %s", mdtext.Text(s.Error))
	}
	b.WriteString("\n\n")
	if len(s.Steps) > 0 {
		b.WriteString("| step | type | status | duration |\n|---|---|---|---|\n")
		for _, st := range s.Steps {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mdtext.Text(st.Name), mdtext.Text(st.Type), mdtext.Text(st.Status), mdtext.Text(st.Duration))
		}
		b.WriteString("\n")
	}
	if len(s.Failures) > 0 {
		tolerated := 0
		for _, f := range s.Failures {
			if f.Tolerated {
				tolerated++
			}
		}
		if tolerated > 0 {
			fmt.Fprintf(&b, "### Failures (%d, %d of them tolerated)\n\n", len(s.Failures), tolerated)
		} else {
			fmt.Fprintf(&b, "### Failures (%d)\n\n", len(s.Failures))
		}
		for _, f := range s.Failures {
			place := ""
			if f.Place != "" {
				place = " " + mdtext.Code(f.Place)
			}
			fmt.Fprintf(&b, "- %s%s: %s\n", mdtext.Text(f.Step), place, mdtext.Text(f.Message))
		}
		b.WriteString("\n")
	}
	if len(s.Tokens) > 0 {
		b.WriteString("| model | calls | input tokens | output tokens | cost |\n|---|---|---|---|---|\n")
		for _, t := range s.Tokens {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %s |\n", mdtext.Text(t.Model), t.Calls, t.InputTokens, t.Output, mdtext.Text(t.Cost))
		}
		b.WriteString("\n")
	}
	if s.Cost != "" {
		fmt.Fprintf(&b, "Cost: %s\n\n", mdtext.Text(s.Cost))
	}
	if s.Report != "" {
		fmt.Fprintf(&b, "Report: %s\n\n", mdtext.Code(s.Report))
	}
	if s.Blackboard != "" {
		fmt.Fprintf(&b, "Blackboard: %s\n\n", mdtext.Code(s.Blackboard))
	}
	return b.String()
}

// AppendSummary appends md to the file $GITHUB_STEP_SUMMARY names (path).
func AppendSummary(path, md string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	if _, err := f.WriteString(md); err != nil {
		f.Close()
		return fmt.Errorf("GITHUB_STEP_SUMMARY %s: %w", path, err)
	}
	return f.Close()
}

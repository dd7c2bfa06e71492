package ghactions

import (
	"fmt"
	"os"
	"strings"
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

// SummaryFailure is a failed test or a refused diff: where and why.
type SummaryFailure struct{ Step, Place, Message string }

// SummaryTokens is one model's use.
type SummaryTokens struct {
	Model                      string
	Calls, InputTokens, Output int
	Cost                       string
}

// Markdown renders the summary. Every value is escaped (Text): a step's
// name or a model's message shows as written and cannot add a link, an
// image, HTML or a table cell.
func (s Summary) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## runner: %s %s\n\n", Text(s.Plan), Text(s.Status))
	fmt.Fprintf(&b, "Run %s, %s.", Code(s.Run), Text(s.Duration))
	if s.Error != "" {
		fmt.Fprintf(&b, " %s", Text(s.Error))
	}
	b.WriteString("\n\n")
	if len(s.Steps) > 0 {
		b.WriteString("| step | type | status | duration |\n|---|---|---|---|\n")
		for _, st := range s.Steps {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", Text(st.Name), Text(st.Type), Text(st.Status), Text(st.Duration))
		}
		b.WriteString("\n")
	}
	if len(s.Failures) > 0 {
		fmt.Fprintf(&b, "### Failures (%d)\n\n", len(s.Failures))
		for _, f := range s.Failures {
			place := ""
			if f.Place != "" {
				place = " " + Code(f.Place)
			}
			fmt.Fprintf(&b, "- %s%s: %s\n", Text(f.Step), place, Text(f.Message))
		}
		b.WriteString("\n")
	}
	if len(s.Tokens) > 0 {
		b.WriteString("| model | calls | input tokens | output tokens | cost |\n|---|---|---|---|---|\n")
		for _, t := range s.Tokens {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %s |\n", Text(t.Model), t.Calls, t.InputTokens, t.Output, Text(t.Cost))
		}
		b.WriteString("\n")
	}
	if s.Cost != "" {
		fmt.Fprintf(&b, "Cost: %s\n\n", Text(s.Cost))
	}
	if s.Report != "" {
		fmt.Fprintf(&b, "Report: %s\n\n", Code(s.Report))
	}
	if s.Blackboard != "" {
		fmt.Fprintf(&b, "Blackboard: %s\n\n", Code(s.Blackboard))
	}
	return b.String()
}

// Text escapes s for Markdown on one line: punctuation Markdown reads is
// backslashed, &, < and > become entities (GitHub's summary renders
// HTML), and line breaks become spaces (a row ends at one).
func Text(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '\r', '\n', '\t':
			b.WriteByte(' ')
		case '\\', '`', '*', '_', '{', '}', '[', ']', '(', ')', '#', '+', '-', '!', '|', '~', '$', '@':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			if r < 0x20 || r == 0x7f {
				continue // control characters: nothing to show
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Code shows s as inline code, with a fence longer than any run of
// backticks inside it; on one line.
func Code(s string) string {
	s = strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return fence + pad + s + pad + fence
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

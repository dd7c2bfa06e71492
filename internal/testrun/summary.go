package testrun

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

const (
	maxSummary          = 2048 // bytes
	defaultSummaryFails = 5
	summaryExcerptLines = 8
	summaryOutputLines  = 15
)

// summarize writes the short text a plan pastes into the next prompt: the
// verdict with its numbers, then the first failures with where and why,
// then how many more. It never exceeds maxSummary bytes.
func summarize(res *Result, detail string, maxFails int, timeout time.Duration) string {
	if maxFails <= 0 {
		maxFails = defaultSummaryFails
	}
	var b summaryBuilder
	b.line(headline(res, detail, timeout))

	shownBuild := 0
	for _, e := range res.BuildErrors {
		if shownBuild == 10 || !b.fits(buildErrorText(e)) {
			break
		}
		b.line(buildErrorText(e))
		shownBuild++
	}
	if more := len(res.BuildErrors) - shownBuild; more > 0 {
		b.line(fmt.Sprintf("and %d more build errors", more))
	}

	shown := 0
	for _, f := range res.Failures {
		if shown == maxFails {
			break
		}
		text := failureText(f)
		if !b.fits(text) {
			// a shorter form before giving up on this failure
			if text = failureHead(f); !b.fits(text) {
				break
			}
		}
		b.line(text)
		shown++
	}
	total := max(len(res.Failures), res.Counts.Failed+res.Counts.Errors)
	if more := total - shown; more > 0 && shown > 0 {
		b.line(fmt.Sprintf("and %d more failures", more))
	}

	// Nothing specific was understood: the end of the output is all a
	// model can go on.
	if shown == 0 && shownBuild == 0 && res.Outcome != Passed && res.Outcome != NoTests && res.Output != "" && detail == "" {
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(res.Output), "\n") {
			if !strings.HasPrefix(l, "npm warn") && !strings.HasPrefix(l, "npm WARN") {
				lines = append(lines, l)
			}
		}
		if len(lines) > summaryOutputLines {
			lines = lines[len(lines)-summaryOutputLines:]
		}
		if len(lines) > 0 && strings.TrimSpace(strings.Join(lines, "")) != "" {
			b.line("Last lines of output:")
		}
		for _, l := range lines {
			l = clip(stripANSI(l), 200)
			if !b.fits(l) {
				break
			}
			b.line(l)
		}
	}
	return clip(strings.TrimRight(b.String(), "\n"), maxSummary)
}

func headline(res *Result, detail string, timeout time.Duration) string {
	c := res.Counts
	cmd := "`" + clip(res.Command, 120) + "`"
	switch res.Outcome {
	case Passed:
		if c.Total == 0 { // a command whose tests were not counted
			return fmt.Sprintf("PASSED: %s exited with status 0.", cmd)
		}
		return fmt.Sprintf("PASSED: %s passed%s (%s).", plural(c.Passed, "test"), skipped(c), cmd)
	case Failed:
		if c.Failed+c.Errors == 0 {
			return fmt.Sprintf("FAILED: %s exited with status %d.", cmd, res.ExitCode)
		}
		s := fmt.Sprintf("FAILED: %d of %s failed", c.Failed, plural(c.Total, "test"))
		if c.Errors > 0 {
			s += ", " + plural(c.Errors, "error")
		}
		return s + fmt.Sprintf(" (%d passed%s).", c.Passed, skipped(c))
	case BuildFailed:
		return fmt.Sprintf("BUILD FAILED: the tests did not compile (%s).", cmd)
	case CollectionError:
		return fmt.Sprintf("COLLECTION ERROR: test files could not be loaded (%s).", cmd)
	case Timeout:
		if res.TimedOut && timeout > 0 {
			return fmt.Sprintf("TIMEOUT: %s was stopped after %v; %d passed, %d failed before.", cmd, timeout, c.Passed, c.Failed)
		}
		if res.TimedOut {
			return fmt.Sprintf("TIMEOUT: %s was stopped; %d passed, %d failed before.", cmd, c.Passed, c.Failed)
		}
		return fmt.Sprintf("TIMEOUT: the test runner's own timeout ended %s.", cmd)
	case NoTests:
		if c.Skipped > 0 {
			return fmt.Sprintf("NO TESTS: %s ran no test; %s skipped.", cmd, plural(c.Skipped, "test was", "tests were"))
		}
		return fmt.Sprintf("NO TESTS: %s found no tests.", cmd)
	}
	if detail == "" {
		detail = fmt.Sprintf("%s exited with status %d", cmd, res.ExitCode)
	}
	return "ERROR: " + detail
}

func skipped(c Counts) string {
	if c.Skipped == 0 {
		return ""
	}
	return fmt.Sprintf(", %d skipped", c.Skipped)
}

// plural says "1 test" or "3 tests"; with two forms, "1 test was".
func plural(n int, forms ...string) string {
	one, many := forms[0], forms[0]+"s"
	if len(forms) > 1 {
		many = forms[1]
	}
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func buildErrorText(e BuildError) string {
	switch {
	case e.File == "":
		return e.Message
	case e.Col > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Message)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message)
	}
	return e.File + ": " + e.Message
}

// failureHead is the first line of a failure: where, which, what.
func failureHead(f Failure) string {
	where := f.File
	if where != "" && f.Line > 0 {
		where += ":" + strconv.Itoa(f.Line)
	}
	var parts []string
	if where != "" {
		parts = append(parts, where)
	}
	if f.ID != f.File { // a file that did not load is its own id
		parts = append(parts, f.ID)
	}
	head := "- " + strings.Join(parts, ": ")
	if f.Kind != "" && f.Kind != KindFail {
		head += " [" + f.Kind + "]"
	}
	if f.Message != "" {
		head += ": " + f.Message
	}
	return head
}

// failureText adds the first lines of the excerpt, indented, leaving out the
// message already given.
func failureText(f Failure) string {
	head := failureHead(f)
	var lines []string
	for _, l := range strings.Split(f.Excerpt, "\n") {
		if strings.TrimSpace(l) == "" && len(lines) == 0 {
			continue
		}
		if len(lines) == 0 && f.Message != "" && strings.Contains(l, f.Message) {
			continue
		}
		lines = append(lines, "    "+l)
		if len(lines) == summaryExcerptLines {
			break
		}
	}
	if len(lines) == 0 {
		return head
	}
	return head + "\n" + strings.Join(lines, "\n")
}

type summaryBuilder struct{ strings.Builder }

func (b *summaryBuilder) fits(s string) bool { return b.Len()+len(s)+1 <= maxSummary-30 }
func (b *summaryBuilder) line(s string)      { b.WriteString(s); b.WriteByte('\n') }

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The live display of fan-outs and sub-plans on a terminal: a for_each of
// more items than the live block has rows is one line with its progress
// while it runs and one line counting its items once done, with only
// the items that failed under it, in input order; a sub-plan call's
// steps are shown under the call, under its item, before the next step
// (not after the run's last step).
func TestLiveDisplayGroupsItemsAndCalls(t *testing.T) {
	wd := t.TempDir()
	var items []string
	for i := range 40 {
		items = append(items, fmt.Sprintf("n%02d", i))
	}
	many := filepath.Join(wd, "many.yaml")
	os.WriteFile(many, []byte(`version: 1
name: many
steps:
  - label: each
    type: command
    for_each: split("`+strings.Join(items, " ")+`", " ")
    max_concurrency: 3
    fail_fast: false
    continue_on_error: true
    run: 'test "${{ item }}" != n17 && test "${{ item }}" != n05'
  - {label: after, type: command, run: "true"}
`), 0o644)
	example, _ := filepath.Abs("../../examples/review-then-fix/plan.yaml")
	for _, c := range []struct {
		name, plan string
		code       int
		lines      []string // in this order on the final screen
		absent     *regexp.Regexp
		live       *regexp.Regexp // a frame of the live block
	}{
		{"a for_each of 40 items", many, 0,
			[]string{"✗ each  D  2 of 40 items failed (tolerated)", "  ✗ each[5]  D  exit status 1", "  ✗ each[17]  D  exit status 1", "✓ after  D"},
			regexp.MustCompile(`each\[(0|1|16|39)\]`),
			regexp.MustCompile(`[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] each  \S+  \d+ items: \d+ succeeded, (\d+ failed, )?\d+ running`)},
		{"a for_each of sub-plan calls", example, 0,
			[]string{"✓ find  D", "✓ fix  D", "  ✓ fix[0]  D", "    ✓ fix[0]/review  D", "    ✓ fix[0]/propose  D", "    ✓ fix[0]/check  D",
				"  ✓ fix[1]  D", "    ✓ fix[1]/review  D", "    ✓ fix[1]/propose  D", "    ✓ fix[1]/check  D", "✓ summary  D"},
			regexp.MustCompile(`(?s)summary.*fix\[`), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw, _, code := runOnTerminal(t, wd, []string{"NO_COLOR=1"}, "run", c.plan)
			got := durationRE.ReplaceAllString(settle(raw), "D")
			if code != c.code {
				t.Fatalf("exit %d\n%s", code, got)
			}
			at := 0
			for _, l := range c.lines {
				i := strings.Index(got[at:], "\n"+l+"\n")
				if i < 0 {
					t.Fatalf("no line %q after offset %d on the screen:\n%s", l, at, got)
				}
				at += i + 1
			}
			if c.absent.MatchString(got) {
				t.Errorf("the screen has %s:\n%s", c.absent, got)
			}
			if c.live != nil && !c.live.MatchString(raw) {
				t.Errorf("no live line with the items' progress (%s) in:\n%q", c.live, raw)
			}
		})
	}
}

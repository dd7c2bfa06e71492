package report

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
)

// A long section's listing is aligned as text/tabwriter aligns it, runs
// of one-line entries between several-line contents each on their own,
// without holding the lines to measure them or to write them.
func TestListingAsTabwriter(t *testing.T) {
	entry := func(i int, content string) entryView {
		e := entryView{Seq: int64(i), TS: "12:00:00.000", Role: "step", Author: strings.Repeat("a", i%7), Label: fmt.Sprint("s", i*i),
			Key: fmt.Sprint("k", i%13), Version: int64(i % 3), Content: content}
		switch i % 5 {
		case 1:
			e.Key = ""
		case 2:
			e.Topic, e.Deleted = "tópic·ü", true
		case 3:
			e.Author = "ünïcode ✓"
		}
		return e
	}
	const n = 1500 // lines of a few parts (listPart)
	for name, contents := range map[string]func(i int) string{
		"one line each":        func(i int) string { return fmt.Sprint("v", i) },
		"several lines here":   func(i int) string { return map[bool]string{true: "two\nlines\n\tand a tab", false: "one"}[i%17 == 4] },
		"the first of several": func(i int) string { return map[bool]string{true: "a\nb", false: ""}[i == 0] },
		"the last of several":  func(i int) string { return map[bool]string{true: "a\nb", false: "x\ty"}[i == n-1] },
		"all of several":       func(i int) string { return "a\nb" },
	} {
		var want strings.Builder
		tw := tabwriter.NewWriter(&want, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "seq\ttime\trole\tauthor\tstep\tkey\tcontent")
		l := newListing()
		var es []entryView
		for i := range n {
			es = append(es, entry(i, contents(i)))
			l.measure(es[i])
		}
		for _, e := range es {
			c, first, rest, more := cells(e)
			fmt.Fprintf(tw, "%s\t%s\n", strings.Join(c[:], "\t"), first)
			if more {
				fmt.Fprintf(tw, "%s\n", "    "+strings.ReplaceAll(rest, "\n", "\n    "))
			}
		}
		tw.Flush()
		parts := slices.Collect(l.parts(slices.Values(es)))
		if len(parts) < 2 {
			t.Fatalf("%s: the listing came in %d part, want several", name, len(parts))
		}
		if got := strings.Join(parts, ""); got != want.String() {
			t.Errorf("%s: the listing is\n%s\ntabwriter's\n%s", name, got, want.String())
		}
	}
}

package testrun

import (
	"regexp"
	"strings"
	"sync"
)

// Go assertion libraries that print their report under the log line,
// which then says only "x_test.go:12:" (testify, quicktest) or
// "assertion failed:" with a diff below (gotest.tools): the message is
// read from the report.

var (
	// testify: "\tError Trace:\t/p/x_test.go:12", "\tError:      \tNot equal: ",
	// and a value's further lines "\t            \texpected: 5"
	testifyKey  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\t([A-Z][A-Za-z ]*):\s*\t(.*)$`) })
	testifyMore = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\t\s+\t\s*(.*)$`) })
	// quicktest: "error:" alone on its line, the value indented below
	qtKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s+([a-z][a-z ]*):$`) })
)

// continuation adds l to the lines under a log line indented ind, and says
// whether the report ended (a line indented no deeper).
func continuation(cont []string, l string, ind int) ([]string, bool) {
	if strings.TrimSpace(l) == "" {
		return cont, false
	}
	if indentOf(l) <= ind {
		return cont, true
	}
	if len(cont) < 60 {
		cont = append(cont, l)
	}
	return cont, false
}

// assertMessage returns the message of a failure whose log line said msg
// with the lines cont under it, and the place the report gives (testify's
// Error Trace), if any.
func assertMessage(msg string, cont []string) (string, string, int) {
	msg = strings.TrimSpace(msg)
	if len(cont) == 0 || msg != "" && !strings.HasSuffix(msg, ":") {
		return msg, "", 0
	}
	type entry struct {
		key  string
		vals []string
	}
	var entries []*entry
	get := func(key string) []string {
		for _, e := range entries {
			if e.key == key {
				return e.vals
			}
		}
		return nil
	}
	var cur *entry
	for _, l := range cont {
		if m := testifyKey().FindStringSubmatch(l); m != nil {
			cur = &entry{key: m[1]}
			entries = append(entries, cur)
			if v := strings.TrimSpace(m[2]); v != "" {
				cur.vals = append(cur.vals, v)
			}
			continue
		}
		if m := testifyMore().FindStringSubmatch(l); m != nil && cur != nil {
			cur.vals = append(cur.vals, strings.TrimSpace(m[1]))
			continue
		}
		if m := qtKey().FindStringSubmatch(l); m != nil {
			cur = &entry{key: m[1]}
			entries = append(entries, cur)
			continue
		}
		if cur != nil {
			cur.vals = append(cur.vals, strings.TrimSpace(l))
		}
	}
	switch {
	case get("Error") != nil: // testify
		out := joinValue(get("Error"), 3)
		if m := get("Messages"); m != nil {
			out += " — " + joinValue(m, 2)
		}
		file, line := "", 0
		if tr := get("Error Trace"); len(tr) > 0 {
			var cands []place
			for _, c := range places(tr[0], ".go") {
				if c.rest == "" {
					cands = append(cands, c)
				}
			}
			if at, ok := pickPlace(cands, existsIn("")); ok {
				file, line = at.file, at.line
			}
		}
		return out, file, line
	case get("error") != nil: // quicktest
		out := joinValue(get("error"), 2)
		if c := get("comment"); c != nil {
			out += " — " + joinValue(c, 2)
		}
		if got, want := get("got"), get("want"); len(got) == 1 && len(want) == 1 {
			out += " (got " + got[0] + ", want " + want[0] + ")"
		}
		return out, "", 0
	}
	if msg == "" { // a message printed on the lines under the place
		return firstLine(strings.Join(cont, "\n")), "", 0
	}
	// gotest.tools' "assertion failed:" over a diff: its changed lines
	var changed []string
	for _, l := range cont {
		t := strings.TrimSpace(strings.ReplaceAll(l, "\u00a0", " ")) // go-cmp marks with no-break spaces
		if strings.HasPrefix(t, "---") || strings.HasPrefix(t, "+++") || len(changed) == 4 {
			continue
		}
		if strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "+ ") {
			changed = append(changed, strings.Join(strings.Fields(t), " "))
		}
	}
	if len(changed) > 0 {
		return msg + " " + strings.Join(changed, "; "), "", 0
	}
	return msg, "", 0
}

// joinValue puts the first n lines of a value on one line, stopping at a
// blank line or a diff (which the excerpt shows).
func joinValue(vals []string, n int) string {
	var parts []string
	for _, v := range vals {
		if v == "" || v == "Diff:" || len(parts) == n {
			break
		}
		parts = append(parts, strings.Join(strings.Fields(v), " "))
	}
	return strings.Join(parts, " ")
}

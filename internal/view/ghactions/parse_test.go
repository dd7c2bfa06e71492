package ghactions

import (
	"strconv"
	"strings"
	"testing"
)

// parsed is a workflow command as GitHub's runner reads it.
type parsed struct {
	command string
	props   map[string]string
	data    string
}

// parseCommand reads a line as GitHub's runner does (actions/runner,
// ActionCommand.TryParseV2): the command info runs from the leading "::"
// to the next "::"; its properties, after the first space, are trimmed,
// split at every ",", each at its first "=" (an empty value is
// dropped); a property's value is unescaped by replacing %0D, %0A, %3A,
// %2C and then %25, one after the other, and the data's by %0D, %0A
// and then %25.
func parseCommand(line string) (parsed, bool) {
	line = strings.TrimLeft(line, " \t")
	if !strings.HasPrefix(line, "::") {
		return parsed{}, false
	}
	end := strings.Index(line[2:], "::")
	if end < 0 {
		return parsed{}, false
	}
	info, data := line[2:2+end], line[2+end+2:]
	p := parsed{props: map[string]string{}}
	name, props, hasProps := strings.Cut(info, " ")
	p.command = name
	if hasProps {
		for _, kv := range strings.Split(strings.TrimSpace(props), ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" || v == "" {
				continue
			}
			for _, m := range [][2]string{{"%0D", "\r"}, {"%0A", "\n"}, {"%3A", ":"}, {"%2C", ","}, {"%25", "%"}} {
				v = strings.ReplaceAll(v, m[0], m[1])
			}
			p.props[k] = v
		}
	}
	for _, m := range [][2]string{{"%0D", "\r"}, {"%0A", "\n"}, {"%25", "%"}} {
		data = strings.ReplaceAll(data, m[0], m[1])
	}
	p.data = data
	return p, true
}

// An annotation keeps its file, line, column and title for any file
// name, as GitHub's runner reads the command: the characters that end
// the properties (":"), start the next one (","), end the line (CR,
// LF) or start an escape ("%", also before what looks like an escape)
// are escaped.
func TestAnnotationFileAndLineSurviveGitHubsParser(t *testing.T) {
	for _, tc := range []struct{ name, file string }{
		{"plain", "src/a_test.go"},
		{"colon", "src/a:b_test.go"},
		{"double colon", "tests/test_x.py::test_y"},
		{"trailing colon", "dir:/"},
		{"drive letter", `C:\src\a_test.go`},
		{"comma", "a,b.js"},
		{"comma and property", "a,line=99,col=9.js"},
		{"equals", "=x=y.go"},
		{"newline", "a\nb.go"},
		{"crlf", "a\r\nb.go"},
		{"percent", "100%.go"},
		{"escape lookalikes", "%0A%3A%2C%25%0D.go"},
		{"percent before escape", "%%3A"},
		{"command in name", "x::error file=evil.go::y"},
		{"spaces", " a b .go"},
		{"unicode", "tést/ü:ñ.go"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Annotation{Level: "warning", File: tc.file, Line: 12, Col: 3, Title: "t: " + tc.file, Message: "m " + tc.file}
			cmd := a.String()
			if strings.ContainsAny(cmd, "\r\n") {
				t.Fatalf("the command spans lines: %q", cmd)
			}
			p, ok := parseCommand(cmd)
			if !ok || p.command != "warning" {
				t.Fatalf("not a warning command: %q", cmd)
			}
			want := map[string]string{"file": tc.file, "line": strconv.Itoa(a.Line), "col": strconv.Itoa(a.Col), "title": a.Title}
			for k, v := range want {
				if p.props[k] != v {
					t.Errorf("%s = %q, want %q (command %q)", k, p.props[k], v, cmd)
				}
			}
			if len(p.props) != len(want) {
				t.Errorf("properties %v, want only %v", p.props, want)
			}
			if p.data != a.Message {
				t.Errorf("message %q, want %q", p.data, a.Message)
			}
		})
	}
}

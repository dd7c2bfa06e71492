package plans

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// yaml.v3 names a line for most syntax errors, often the line where the
// enclosing block starts rather than the one at fault, and never a column.
// yamlError finds the true place: from the message's kind, the source text,
// and for indentation errors the first prefix of the file that fails.

var (
	yamlLineRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })
	yamlAnchorRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`unknown anchor '([^']*)' referenced`) })
)

// parseYAML parses src into a node tree, or returns the positioned error.
func parseYAML(path string, src []byte) (*yaml.Node, *Error) {
	doc, _, err := parseYAMLStream(path, string(src), nil)
	return doc, err
}

// parseYAMLStream parses the first document of text and returns the decoder
// positioned after it, so that whether more documents follow can be asked
// without parsing the first one again (a second parse of the whole plan
// was a tenth of a profiled run). The decoder is nil when the source was
// read by fastYAML, which reads only sources of one document.
//
// steps, when not nil, takes the plan's steps as fastYAML reads them
// (fySteps); when fastYAML does not read the source, its list stays nil
// and the tree holds every step.
func parseYAMLStream(path string, text string, steps *fySteps) (*yaml.Node, *yaml.Decoder, *Error) {
	if !utf8.ValidString(text) {
		return nil, nil, invalidUTF8(path, []byte(text))
	}
	if doc, ok := fastYAMLWith(text, 0, steps); ok {
		return doc, nil, nil
	}
	if steps != nil {
		steps.list = nil
	}
	src := []byte(text) // yaml.v3 reads bytes
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		return nil, nil, yamlError(path, src, err)
	}
	return &doc, dec, nil
}

func invalidUTF8(path string, src []byte) *Error {
	off := 0
	for off < len(src) {
		r, size := utf8.DecodeRune(src[off:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		off += size
	}
	line, col := offsetPos(src, off)
	return &Error{File: path, Line: line, Col: col,
		Msg: fmt.Sprintf("the file is not valid UTF-8 (byte 0x%02x); save it as UTF-8", src[off])}
}

// offsetPos is the line and column (in characters, from 1) of a byte offset.
func offsetPos(src []byte, off int) (line, col int) {
	start := 0
	line = 1
	for i := 0; i < off && i < len(src); i++ {
		if src[i] == '\n' {
			line++
			start = i + 1
		}
	}
	return line, 1 + utf8.RuneCount(src[start:off])
}

// yamlError turns a yaml.v3 syntax error into a positioned Error with a hint.
func yamlError(path string, src []byte, err error) *Error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	line := 0
	if m := yamlLineRE().FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	lines := strings.Split(string(src), "\n")
	text := func(l int) string {
		if l >= 1 && l <= len(lines) {
			return lines[l-1]
		}
		return ""
	}
	at := func(l, col int, m string) *Error {
		if l < 1 {
			l = 1
		}
		if col < 1 {
			col = firstNonSpace(text(l))
		}
		return &Error{File: path, Line: l, Col: col, Msg: m}
	}
	switch {
	case strings.Contains(msg, "found character that cannot start any token"):
		s := text(line)
		if i := strings.IndexByte(s, '\t'); i >= 0 {
			return at(line, runeCol(s, i), "a tab here: YAML is indented with spaces only; replace the tab with spaces")
		}
		if i := strings.IndexAny(s, "@`"); i >= 0 {
			return at(line, runeCol(s, i), fmt.Sprintf("%c cannot start a plain YAML value; quote the value", s[i]))
		}
		return at(line, 0, msg)
	case strings.Contains(msg, "unknown anchor"):
		m := yamlAnchorRE().FindStringSubmatch(msg)
		name := ""
		if m != nil {
			name = m[1]
		}
		l, c := findAlias(lines, name)
		return at(l, c, fmt.Sprintf("unknown anchor *%s: define it first with &%s (an anchor must come before its aliases)", name, name))
	case strings.Contains(msg, "did not find expected ',' or ']'"), strings.Contains(msg, "did not find expected ',' or '}'"):
		closer := msg[len(msg)-2]
		opener := byte('[')
		if closer == '}' {
			opener = '{'
		}
		if l, c, ok := unclosed(lines, line, opener); ok {
			return at(l, c, fmt.Sprintf("this %c is not closed with %c (or an item in it is not separated by a comma); quote the value if the %c is text", opener, closer, opener))
		}
		return at(line, 0, fmt.Sprintf("a flow %c…%c is not closed or not separated by commas", opener, closer))
	case strings.Contains(msg, "found unexpected end of stream"):
		if l, c, q, ok := unclosedQuote(lines, line); ok {
			return at(l, c, fmt.Sprintf("this %c-quoted string is not closed", q))
		}
		return at(line, 0, "the file ends inside a value (an unclosed quote?)")
	case strings.Contains(msg, "mapping values are not allowed in this context"):
		s := text(line)
		i := strings.Index(s, ": ")
		if j := strings.LastIndex(s, ": "); j > i && strings.TrimLeft(s[:i], " -") != "" {
			i = j
		}
		if strings.HasSuffix(s, ":") && i < 0 {
			i = len(s) - 1
		}
		prev := text(line - 1)
		prevKey := firstNonSpace(prev)
		if strings.HasPrefix(strings.TrimSpace(prev), "- ") {
			prevKey += 2
		}
		if i >= 0 && firstNonSpace(s) > prevKey && strings.Contains(prev, ": ") && !strings.HasSuffix(strings.TrimSpace(prev), ":") {
			return at(line, firstNonSpace(s), "this line is indented more than the key above it; line keys up with their siblings")
		}
		return at(line, runeCol(s, max(i, 0)), "a \": \" inside a plain value; quote the value (\"a: b\"), or fix the indentation")
	}
	// Indentation and structure errors: yaml.v3 names the line where the
	// enclosing block starts; the fault is on the first line whose
	// inclusion makes the file fail.
	if l := firstFailingLine(lines, line); l > 0 {
		hint := "the indentation does not fit the lines above (items of one list or keys of one mapping line up)"
		if strings.HasPrefix(strings.TrimSpace(text(l)), "- ") && !strings.Contains(msg, "'-'") {
			hint = "a list item where a key was expected; check the indentation"
		}
		return at(l, 0, hint+" ("+msg+")")
	}
	if line == 0 {
		line = len(lines)
		for line > 1 && strings.TrimSpace(text(line)) == "" {
			line--
		}
	}
	return at(line, 0, msg)
}

// firstFailingLine finds the first line L such that the file's first L
// lines fail to parse for a reason other than ending early, by bisection
// (a file that fails at line L fails with any lines added after it).
func firstFailingLine(lines []string, from int) int {
	fails := func(n int) bool {
		var d yaml.Node
		err := yaml.Unmarshal([]byte(strings.Join(lines[:n], "\n")+"\n"), &d)
		if err == nil {
			return false
		}
		m := err.Error()
		return !strings.Contains(m, "end of stream") && !strings.Contains(m, "did not find expected ','")
	}
	lo, hi := max(from, 1), len(lines)
	if !fails(hi) {
		return 0
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

func firstNonSpace(s string) int {
	return 1 + utf8.RuneCountInString(s[:len(s)-len(strings.TrimLeft(s, " \t"))])
}

func runeCol(s string, i int) int { return 1 + utf8.RuneCountInString(s[:i]) }

// findAlias finds *name outside quotes and comments.
func findAlias(lines []string, name string) (int, int) {
	for l, s := range lines {
		for i := 0; i < len(s); i++ {
			switch s[i] {
			case '#':
				if i == 0 || s[i-1] == ' ' {
					i = len(s)
				}
			case '*':
				rest := s[i+1:]
				if strings.HasPrefix(rest, name) && (len(rest) == len(name) || strings.ContainsRune(" ,]}\t", rune(rest[len(name)]))) {
					return l + 1, runeCol(s, i)
				}
			}
		}
	}
	return 0, 0
}

// unclosed finds the last opener on line (or after it) that the rest of
// the file does not close.
func unclosed(lines []string, line int, opener byte) (int, int, bool) {
	type pos struct{ l, c int }
	var stack []pos
	var quote byte
	for l := max(line, 1); l <= len(lines); l++ {
		s := lines[l-1]
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'':
				if i == 0 || strings.ContainsRune(" [{,:", rune(s[i-1])) {
					quote = c
				}
			case c == '#' && (i == 0 || s[i-1] == ' '):
				i = len(s)
			case c == '[' || c == '{':
				stack = append(stack, pos{l, runeCol(s, i)})
			case c == ']' || c == '}':
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
			}
		}
	}
	if len(stack) == 0 {
		return 0, 0, false
	}
	return stack[0].l, stack[0].c, true
}

// unclosedQuote finds the opening quote of a string the file never closes.
func unclosedQuote(lines []string, line int) (int, int, byte, bool) {
	for l := max(line-1, 1); l <= min(line+1, len(lines)); l++ {
		s := lines[l-1]
		var quote byte
		at := 0
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '#' && (i == 0 || s[i-1] == ' '):
				i = len(s)
			case (c == '"' || c == '\'') && (i == 0 || strings.ContainsRune(" [{,:", rune(s[i-1]))):
				quote, at = c, i
			}
		}
		if quote != 0 {
			return l, runeCol(s, at), quote, true
		}
	}
	return 0, 0, 0, false
}

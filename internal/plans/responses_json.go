package plans

import (
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/planrunner/runner/internal/bigjson"
	"gopkg.in/yaml.v3"
)

// jsonDepthLimit bounds the nesting the JSON reader follows (it recurses);
// a deeper file is left to the YAML parser, which has its own limits.
const jsonDepthLimit = 1000

// jsonNodes reads src, a responses file written as JSON, into the same
// node tree yaml.v3 would build (tags, positions, styles), so the checks
// and messages of ParseResponses apply unchanged. It exists for memory:
// yaml.v3 builds a scalar by appending byte by byte, allocating about six
// times a 50 MiB answer while reading it. Here the file's bytes
// become the text of its strings without a copy: a string without escapes
// is a slice of src, viewed as a string. src must not be changed after
// this call (LoadResponsesFile reads it fresh and drops it).
//
// ok is false when src is not exactly one valid JSON value, or is not
// valid UTF-8: the caller then parses it as YAML, which reports what is
// wrong and where; the JSON reader itself never reports an error.
func jsonNodes(src []byte) (doc *yaml.Node, ok bool) {
	if len(src) == 0 || !utf8.Valid(src) {
		return nil, false
	}
	j := &jsonReader{src: src, text: unsafe.String(&src[0], len(src)), line: 1}
	j.space()
	root, ok := j.value(0)
	if !ok {
		return nil, false
	}
	j.space()
	if j.off != len(src) {
		return nil, false
	}
	return &yaml.Node{Kind: yaml.DocumentNode, Line: root.Line, Column: root.Column, Content: []*yaml.Node{root}}, true
}

type jsonReader struct {
	src  []byte
	text string // src viewed as a string: its substrings are the node values
	off  int
	// Positions: the line (from 1), the offset where it starts, and the
	// last offset on it whose column (in characters) is known, so a long
	// line is counted once, not once per node.
	line, lineStart, colOff, col int
}

func (j *jsonReader) space() {
	for j.off < len(j.src) {
		switch j.src[j.off] {
		case '\n':
			j.line++
			j.lineStart = j.off + 1
			j.colOff, j.col = j.lineStart, 0
		case ' ', '\t', '\r':
		default:
			return
		}
		j.off++
	}
}

// pos is the line and column (from 1, in characters) of j.off.
func (j *jsonReader) pos() (int, int) {
	if j.colOff < j.lineStart {
		j.colOff, j.col = j.lineStart, 0
	}
	// On the string view: utf8.RuneCount copies its input from the first
	// non-ASCII byte on (string(p[n:])), a copy of the file's rest each
	// time a line holds, say, an é.
	j.col += utf8.RuneCountInString(j.text[j.colOff:j.off])
	j.colOff = j.off
	return j.line, j.col + 1
}

func (j *jsonReader) value(depth int) (*yaml.Node, bool) {
	if j.off >= len(j.src) || depth > jsonDepthLimit {
		return nil, false
	}
	line, col := j.pos()
	n := &yaml.Node{Line: line, Column: col}
	switch c := j.src[j.off]; {
	case c == '{':
		n.Kind, n.Tag, n.Style = yaml.MappingNode, "!!map", yaml.FlowStyle
		j.off++
		j.space()
		if j.off < len(j.src) && j.src[j.off] == '}' {
			j.off++
			return n, true
		}
		for {
			j.space()
			if j.off >= len(j.src) || j.src[j.off] != '"' {
				return nil, false
			}
			k, ok := j.value(depth + 1)
			if !ok {
				return nil, false
			}
			j.space()
			if j.off >= len(j.src) || j.src[j.off] != ':' {
				return nil, false
			}
			j.off++
			j.space()
			v, ok := j.value(depth + 1)
			if !ok {
				return nil, false
			}
			n.Content = append(n.Content, k, v)
			if more, ok := j.next('}'); !more {
				return n, ok
			}
		}
	case c == '[':
		n.Kind, n.Tag, n.Style = yaml.SequenceNode, "!!seq", yaml.FlowStyle
		j.off++
		j.space()
		if j.off < len(j.src) && j.src[j.off] == ']' {
			j.off++
			return n, true
		}
		for {
			j.space()
			v, ok := j.value(depth + 1)
			if !ok {
				return nil, false
			}
			n.Content = append(n.Content, v)
			if more, ok := j.next(']'); !more {
				return n, ok
			}
		}
	case c == '"':
		s, ok := j.str()
		if !ok {
			return nil, false
		}
		n.Kind, n.Tag, n.Style, n.Value = yaml.ScalarNode, "!!str", yaml.DoubleQuotedStyle, s
		return n, true
	default:
		start := j.off
		for j.off < len(j.src) && !isJSONDelim(j.src[j.off]) {
			j.off++
		}
		word := strings.Clone(j.text[start:j.off]) // not a substring: see aliasMin
		n.Kind, n.Value = yaml.ScalarNode, word
		switch {
		case word == "true" || word == "false":
			n.Tag = "!!bool"
		case word == "null":
			n.Tag = "!!null"
		case isJSONNumber(word):
			n.Tag = "!!float"
			if _, err := strconv.ParseInt(word, 10, 64); err == nil {
				n.Tag = "!!int"
			}
		default:
			return nil, false
		}
		return n, true
	}
}

// next reads what follows a member: ',' (more), the closing bracket (the
// end, ok) or anything else (the end, not ok).
func (j *jsonReader) next(closer byte) (more, ok bool) {
	j.space()
	if j.off >= len(j.src) {
		return false, false
	}
	c := j.src[j.off]
	j.off++
	return c == ',', c == closer
}

// aliasMin is the length from which a string without escapes is a
// substring of the file rather than a copy. A short one (a key, a model's
// name) is copied: as a substring it would keep the whole file, answer
// and all, alive for as long as the responses are, even when that answer
// had escapes and was copied out.
const aliasMin = 4 << 10

// str reads a JSON string at j.off. A long one without escapes (the
// case of a large answer written as it is) is a substring of the file,
// not a copy; one with escapes is decoded in one allocation of its size.
func (j *jsonReader) str() (string, bool) {
	start := j.off
	j.off++
	escaped := false
	for j.off < len(j.src) {
		switch c := j.src[j.off]; {
		case c == '"':
			j.off++
			if !escaped {
				s := j.text[start+1 : j.off-1]
				if len(s) < aliasMin {
					s = strings.Clone(s)
				}
				return s, true
			}
			s, err := bigjson.Unquote(j.src[start:j.off])
			return s, err == nil
		case c == '\\':
			escaped = true
			j.off += 2
		case c < 0x20:
			return "", false
		default:
			j.off++
		}
	}
	return "", false
}

func isJSONDelim(c byte) bool {
	switch c {
	case ',', ']', '}', ':', ' ', '\t', '\r', '\n', '"', '[', '{':
		return true
	}
	return false
}

// isJSONNumber reports whether s is a number as JSON writes it.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		st := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - st
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

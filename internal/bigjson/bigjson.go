// Package bigjson encodes values holding large strings (a model's answer
// of tens of megabytes) the way encoding/json does, byte for byte, into
// one buffer of the exact size. json.Marshal builds a string's encoding
// in a scratch buffer that grows by appending, copies it into its
// encoder's buffer (which doubles as it fills) and copies that out: about
// four times the string allocated, and the encoder's buffer kept in its
// pool until the next collections.
//
// It also tells the errors of decoding JSON to a person (Explain).
package bigjson

import (
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// Large is the string length from which Marshal takes its own path;
// below it, nothing is large enough to matter and json.Marshal is used.
const Large = 32 << 10

// Marshal is json.Marshal(v), the same bytes. When v holds a string of
// Large bytes or more (v itself, or inside map[string]any and []any, as
// decoded JSON and step outputs are), the result is built in one
// allocation of its final size; any other value is encoded by
// json.Marshal, piece by piece.
func Marshal(v any) ([]byte, error) {
	if !hasLarge(v, 0) {
		return json.Marshal(v)
	}
	return Append(nil, v, 0)
}

// Append appends Marshal(v) to dst, growing it once, to its final size
// plus room for reserve more bytes (what the caller writes after), so a
// value with a large string is not copied again to add a prefix or a
// suffix around it.
func Append(dst []byte, v any, reserve int) ([]byte, error) {
	if !hasLarge(v, 0) {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return append(grow(dst, len(b)+reserve), b...), nil
	}
	e := encoder{}
	if err := e.size(v, 0); err != nil {
		return nil, err
	}
	e.buf = grow(dst, e.n+reserve)
	e.write(v, 0)
	return e.buf, nil
}

// grow returns dst with room for n more bytes, in a buffer of exactly
// that size when it must move (slices.Grow would round up).
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	b := make([]byte, len(dst), len(dst)+n)
	copy(b, dst)
	return b
}

// hasLarge reports whether v holds a large string where Marshal looks.
func hasLarge(v any, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch x := v.(type) {
	case string:
		return len(x) >= Large
	case map[string]any:
		for k, e := range x {
			if len(k) >= Large || hasLarge(e, depth+1) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasLarge(e, depth+1) {
				return true
			}
		}
	}
	return false
}

// maxDepth bounds the recursion: a value nested deeper than this is
// encoded by json.Marshal, which also reports a map that holds itself.
const maxDepth = 1000

// encoder makes two passes over a value: the first adds up the size (and
// keeps what json.Marshal encoded, in order), the second writes.
type encoder struct {
	n     int
	other [][]byte // encodings of the values json.Marshal made, in order
	next  int
	buf   []byte
}

func (e *encoder) size(v any, depth int) error {
	if depth > maxDepth {
		return e.marshal(v)
	}
	switch x := v.(type) {
	case string:
		e.n += StringLen(x)
	case map[string]any:
		if x == nil {
			e.n += len("null")
			return nil
		}
		e.n += 2 + max(len(x)-1, 0) // braces, commas
		// In the order write visits them, so the values json.Marshal
		// encodes come in the order they are written.
		for _, k := range sortedKeys(x) {
			e.n += StringLen(k) + 1
			if err := e.size(x[k], depth+1); err != nil {
				return err
			}
		}
	case []any:
		if x == nil {
			e.n += len("null")
			return nil
		}
		e.n += 2 + max(len(x)-1, 0)
		for _, val := range x {
			if err := e.size(val, depth+1); err != nil {
				return err
			}
		}
	default:
		return e.marshal(v)
	}
	return nil
}

func (e *encoder) marshal(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	e.other = append(e.other, b)
	e.n += len(b)
	return nil
}

func (e *encoder) write(v any, depth int) {
	if depth > maxDepth {
		v = other{}
	}
	switch x := v.(type) {
	case string:
		e.buf = AppendString(e.buf, x)
	case map[string]any:
		if x == nil {
			e.buf = append(e.buf, "null"...)
			return
		}
		e.buf = append(e.buf, '{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = AppendString(e.buf, k)
			e.buf = append(e.buf, ':')
			e.write(x[k], depth+1)
		}
		e.buf = append(e.buf, '}')
	case []any:
		if x == nil {
			e.buf = append(e.buf, "null"...)
			return
		}
		e.buf = append(e.buf, '[')
		for i, val := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.write(val, depth+1)
		}
		e.buf = append(e.buf, ']')
	default:
		e.buf = append(e.buf, e.other[e.next]...)
		e.next++
	}
}

// sortedKeys are m's keys in the order encoding/json writes them.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// other stands for a value the first pass had json.Marshal encode.
type other struct{}

// htmlSafe are the ASCII bytes encoding/json writes as they are (it
// escapes <, > and & too, by default).
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// StringLen is the length of s as json.Marshal encodes it.
func StringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case htmlSafe[b]:
				n++
			case b == '\\', b == '"', b == '\b', b == '\f', b == '\n', b == '\r', b == '\t':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			n += len(`\ufffd`)
		case c == '\u2028' || c == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

const hex = "0123456789abcdef"

// AppendString appends s as json.Marshal encodes it: HTML characters,
// control characters, U+2028 and U+2029 escaped, invalid UTF-8 written
// as U+FFFD.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if htmlSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

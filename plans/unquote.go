package plans

// A copy of internal/bigjson's Unquote: plans imports nothing of runner's
// own packages (docs/architecture.md).

import (
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

var errNotJSONString = errors.New("not a JSON string")

// unquoteString is the text of the JSON string literal lit as
// encoding/json decodes it, in one allocation of its exact size:
// encoding/json unquotes into a scratch buffer and copies that into the
// string, twice a large answer with newlines (issue 22).
func unquoteString(lit []byte) (string, bool) {
	var n strCounter
	if unquoteJSON(&n, lit) != nil {
		return "", false
	}
	if n == 0 {
		return "", true
	}
	b := strAppender(make([]byte, 0, int(n)))
	unquoteJSON(&b, lit)
	return unsafe.String(unsafe.SliceData(b), len(b)), true
}

type strSink interface{ write([]byte) }

type strCounter int

func (c *strCounter) write(p []byte) { *c += strCounter(len(p)) }

type strAppender []byte

func (a *strAppender) write(p []byte) { *a = append(*a, p...) }

// unquoteTo writes the text of lit to w, in runs of plain bytes and
// small pieces for escapes.
func unquoteJSON(w strSink, lit []byte) error {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return errNotJSONString
	}
	body := lit[1 : len(lit)-1]
	var out [utf8.UTFMax]byte
	put := func(r rune) { w.write(out[:utf8.EncodeRune(out[:], r)]) }
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '"' || c < 0x20:
			return errNotJSONString
		case c == '\\':
			if i+1 >= len(body) {
				return errNotJSONString
			}
			switch e := body[i+1]; e {
			case '"', '\\', '/':
				put(rune(e))
			case 'b':
				put('\b')
			case 'f':
				put('\f')
			case 'n':
				put('\n')
			case 'r':
				put('\r')
			case 't':
				put('\t')
			case 'u':
				r, ok := jsonHex4(body[i+2:])
				if !ok {
					return errNotJSONString
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r2, ok := jsonHex4(body[min(i+2, len(body)):]); ok && i+1 < len(body) && body[i] == '\\' && body[i+1] == 'u' {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							put(dec)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				put(r)
				continue
			default:
				return errNotJSONString
			}
			i += 2
		default:
			// A run of bytes written as they are: ASCII, and valid UTF-8.
			j := i
			for j < len(body) {
				b := body[j]
				if b < utf8.RuneSelf {
					if b == '"' || b == '\\' || b < 0x20 {
						break
					}
					j++
					continue
				}
				r, size := utf8.DecodeRune(body[j:])
				if r == utf8.RuneError && size == 1 {
					break
				}
				j += size
			}
			if j > i {
				w.write(body[i:j])
				i = j
				continue
			}
			// Invalid UTF-8: one byte, written as U+FFFD.
			put(utf8.RuneError)
			i++
		}
	}
	return nil
}

func jsonHex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	for _, c := range b[:4] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(v), err == nil
}

package bigjson

import (
	"errors"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// ErrNotString is returned by Unquote for input that is not one JSON
// string literal.
var ErrNotString = errors.New("not a JSON string")

// Unquote returns the text of the JSON string literal lit (quotes
// included) as encoding/json decodes it (invalid UTF-8 and lone
// surrogates as U+FFFD), in one allocation of the text's exact size.
// encoding/json unquotes a string with escapes into a scratch buffer and
// then copies that into the string: two copies of a model's answer of
// tens of megabytes, which almost always holds newlines.
func Unquote(lit []byte) (string, error) {
	var n counter
	if err := unquoteTo(&n, lit); err != nil {
		return "", err
	}
	if n == 0 {
		return "", nil
	}
	b := appender(make([]byte, 0, int(n)))
	unquoteTo(&b, lit)
	// b is not written again: the string may share its bytes.
	return unsafe.String(unsafe.SliceData(b), len(b)), nil
}

// UnquoteTo writes the text of the JSON string literal lit to w, as
// Unquote decodes it, without building it (the board hashes a large
// value's text this way), through a small buffer.
func UnquoteTo(w io.Writer, lit []byte) error {
	bw := &buffered{w: w}
	err := unquoteTo(bw, lit)
	bw.flush()
	return err
}

type buffered struct {
	w   io.Writer
	buf [4 << 10]byte
	n   int
}

func (b *buffered) write(p []byte) {
	if b.n+len(p) > len(b.buf) {
		b.flush()
		if len(p) > len(b.buf) {
			b.w.Write(p)
			return
		}
	}
	b.n += copy(b.buf[b.n:], p)
}

func (b *buffered) flush() {
	if b.n > 0 {
		b.w.Write(b.buf[:b.n])
		b.n = 0
	}
}

type sink interface{ write([]byte) }

type counter int

func (c *counter) write(p []byte) { *c += counter(len(p)) }

type appender []byte

func (a *appender) write(p []byte) { *a = append(*a, p...) }

// unquoteTo writes the text of lit to w, in runs of plain bytes and
// small pieces for escapes.
func unquoteTo(w sink, lit []byte) error {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return ErrNotString
	}
	body := lit[1 : len(lit)-1]
	var out [utf8.UTFMax]byte
	put := func(r rune) { w.write(out[:utf8.EncodeRune(out[:], r)]) }
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '"' || c < 0x20:
			return ErrNotString
		case c == '\\':
			if i+1 >= len(body) {
				return ErrNotString
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
				r, ok := hex4(body[i+2:])
				if !ok {
					return ErrNotString
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r2, ok := hex4(body[min(i+2, len(body)):]); ok && i+1 < len(body) && body[i] == '\\' && body[i+1] == 'u' {
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
				return ErrNotString
			}
			i += 2
		default:
			// A run of bytes written as they are: ASCII, and valid UTF-8.
			j := i
			for j < len(body) {
				// Eight plain ASCII bytes a step (a 10 MB plan source
				// went byte by byte: the largest item of reading a
				// 100k-step board's run object).
				if j = PlainRun(body, j); j >= len(body) {
					break
				}
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

func hex4(b []byte) (rune, bool) {
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

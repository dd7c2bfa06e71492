package bigjson

import (
	"strings"
	"testing"
)

// PlainRun stops, eight bytes at a time, where a byte-by-byte scan stops:
// each kind of byte that needs a look, at every offset in a word and
// after one, beside bytes that are one above or below those.
func TestPlainRunAsByteScan(t *testing.T) {
	slow := func(b []byte, i int) int {
		for ; i < len(b); i++ {
			if c := b[i]; c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
				return i
			}
		}
		return i
	}
	fill := []byte{' ', '!', '#', '[', ']', '~', 0x7f, 'a', '0'}
	stops := []byte{'"', '\\', 0, 0x1f, '\n', 0x80, 0xc3, 0xff}
	for _, f := range fill {
		for _, s := range stops {
			for n := 0; n < 20; n++ {
				for at := 0; at <= n; at++ {
					b := []byte(strings.Repeat(string(f), n))
					if at < n {
						b[at] = s
					}
					for from := 0; from <= n; from++ {
						if got, want := PlainRun(b, from), slow(b, from); got != want {
							t.Fatalf("fill %q, %q at %d of %d, from %d: %d, want %d", f, s, at, n, from, got, want)
						}
					}
				}
			}
		}
	}
	// Two stops in a word: the first is found.
	b := []byte("abcdefgh\\ij\x01klmn\"op")
	if got := PlainRun(b, 0); got != 8 {
		t.Errorf("got %d, want 8", got)
	}
}

package bigjson

import (
	"encoding/binary"
	"math/bits"
)

// PlainRun returns the index of the first byte at or after i that is a
// quote, a backslash, a control byte or not ASCII (len(b) if none),
// testing eight bytes per step.
func PlainRun(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		// A byte's high bit is set in m if the byte is >= 0x80, below
		// 0x20, a quote or a backslash; a borrow can only mark bytes
		// above one of those, so the lowest mark is a true one.
		m := (w | (w - 0x20*ones) | ((w ^ '"'*ones) - ones) | ((w ^ '\\'*ones) - ones)) & highs
		if m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
			return i
		}
	}
	return i
}

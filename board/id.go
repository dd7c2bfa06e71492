package board

import (
	"math/rand/v2"
	"time"
)

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// NewID returns a ULID-shaped id: 48 bits of milliseconds then 80 random
// bits, in Crockford base32, so ids sort by creation time.
func NewID(t time.Time) string {
	var b [26]byte
	ms := uint64(t.UnixMilli())
	for i := 9; i >= 0; i-- {
		b[i] = crockford[ms&31]
		ms >>= 5
	}
	hi, lo := rand.Uint64(), rand.Uint64()
	for i := 25; i >= 10; i-- {
		if i >= 13 {
			b[i] = crockford[lo&31]
			lo >>= 5
		} else {
			b[i] = crockford[hi&31]
			hi >>= 5
		}
	}
	return string(b[:])
}

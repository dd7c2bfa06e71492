package board

import (
	"math/rand/v2"
	"strings"
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

// IDTime is the creation time a NewID id carries (to the millisecond); ok
// is false for a string that is not such an id.
func IDTime(id string) (time.Time, bool) {
	if len(id) != 26 {
		return time.Time{}, false
	}
	var ms uint64
	for i := 0; i < 10; i++ {
		d := strings.IndexByte(crockford, id[i])
		if d < 0 || i == 0 && d > 7 {
			return time.Time{}, false
		}
		ms = ms<<5 | uint64(d)
	}
	return time.UnixMilli(int64(ms)).UTC(), true
}

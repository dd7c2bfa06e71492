package board

import (
	"testing"
	"time"
)

// The hand-read times (utcTime) give what time.Time.UnmarshalJSON gives,
// or leave the text to it; near misses of runner's form go to it.
func TestUTCTimeAsTime(t *testing.T) {
	tests := []struct {
		text     string
		wantFast bool
	}{
		{"2026-11-26T10:29:43.469505154Z", true},
		{"2026-11-26T10:29:43Z", true},
		{"2026-11-26T10:29:43.5Z", true},
		{"2026-11-26T10:29:43.000000000Z", true},
		{"2024-02-29T23:59:59.999999999Z", true},
		{"0000-01-01T00:00:00Z", true},
		{"9999-12-31T23:59:59Z", true},
		{"2025-02-29T00:00:00Z", false},            // not a leap year
		{"1900-02-29T00:00:00Z", false},            // nor this
		{"2000-02-29T00:00:00Z", true},             // this one is
		{"2026-04-31T00:00:00Z", false},            // April has 30
		{"2026-13-01T00:00:00Z", false},            // month
		{"2026-00-01T00:00:00Z", false},            // month
		{"2026-01-00T00:00:00Z", false},            // day
		{"2026-01-01T24:00:00Z", false},            // hour
		{"2026-01-01T00:60:00Z", false},            // minute
		{"2026-01-01T00:00:60Z", false},            // leap second
		{"2026-01-01T00:00:00.1234567891Z", false}, // ten digits
		{"2026-01-01T00:00:00.Z", false},
		{"2026-01-01T00:00:00,5Z", false},
		{"2026-01-01t00:00:00Z", false},
		{"2026-01-01T00:00:00z", false},
		{"2026-01-01 00:00:00Z", false},
		{"2026-1-01T00:00:00Z", false},
		{"+026-01-01T00:00:00Z", false},
		{"2026-01-01T00:00:00+00:00", false},
		{"2026-01-01T00:00:00.5-07:00", false},
		{"2026-01-01T0a:00:00Z", false},
		{"2026-01-01T00:00:00", false},
		{"", false},
	}
	for _, tc := range tests {
		t.Run(tc.text, func(t *testing.T) {
			var want time.Time
			werr := want.UnmarshalJSON([]byte(`"` + tc.text + `"`))
			got, ok := utcTime([]byte(tc.text))
			if ok != tc.wantFast {
				t.Errorf("read by hand: %v, want %v", ok, tc.wantFast)
			}
			if !ok {
				return
			}
			if werr != nil {
				t.Fatalf("read by hand a time time refuses (%v): %v", werr, got)
			}
			if got != want || got.Location() != want.Location() {
				t.Errorf("got %#v, want %#v", got, want)
			}
		})
	}
}

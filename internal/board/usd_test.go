package board

import "testing"

// A cost that is not zero never reads as zero.
func TestFormatUSD(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{
		{0, "$0.00"}, {1.5, "$1.50"}, {12.345, "$12.35"}, {0.5, "$0.50"}, {0.0123, "$0.012"},
		{0.00027, "$0.00027"}, {0.000004, "$0.0000040"}, {0.099, "$0.099"},
		{0.000023, "$0.000023"}, {0.004, "$0.0040"}, {1234.5, "$1234.50"}, {0.221, "$0.22"},
	} {
		if got := FormatUSD(c.in); got != c.want {
			t.Errorf("FormatUSD(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

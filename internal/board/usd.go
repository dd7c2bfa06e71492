package board

import (
	"fmt"
	"math"
)

// FormatUSD is how runner writes a cost (a step's usage.cost_usd, a run's
// sum) everywhere: the end of a run, the report, runner runs and serve,
// the CI summaries, eval, the limits' messages. Whole cents from a dollar
// up (with thousands as digits, 1234.50), else two significant digits, so
// a cost that is not zero never reads as $0.00. It lives here, with the
// costs the board records, as the lowest package every view imports.
func FormatUSD(x float64) string {
	if x == 0 || x >= 1 || x <= -1 {
		return fmt.Sprintf("$%.2f", x)
	}
	digits := 2
	for v := math.Abs(x); v < 0.1 && digits < 9; v *= 10 {
		digits++
	}
	return fmt.Sprintf("$%.*f", digits, x)
}

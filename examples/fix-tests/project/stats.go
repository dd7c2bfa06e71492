// Package stats is the tiny project of the fix-tests example: it has a bug
// for the coder agent to fix.
package stats

// Mean returns the arithmetic mean of xs, and 0 for no numbers.
func Mean(xs []float64) float64 {
	var sum float64
	for i := 1; i < len(xs); i++ {
		sum += xs[i]
	}
	return sum / float64(len(xs))
}

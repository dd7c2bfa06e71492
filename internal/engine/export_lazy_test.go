package engine

// SavedViews is how many restored steps' views are not built yet (see
// evaluator.saved), for the tests of resume's cost.
func SavedViews(r *Runner) int {
	r.eval.mu.RLock()
	defer r.eval.mu.RUnlock()
	return len(r.eval.saved)
}

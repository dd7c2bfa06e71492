package engine

import "testing"

// SavedViews is how many restored steps' views are not built yet (see
// evaluator.saved), for the tests of resume's cost.
func SavedViews(r *Runner) int {
	r.eval.mu.RLock()
	defer r.eval.mu.RUnlock()
	return len(r.eval.saved)
}

// ProgCacheSize is how many compiled programs a plan keeps (progCache).
const ProgCacheSize = progCacheSize

// ProgTrialSize is how many compiled programs of expressions run once a
// plan keeps.
const ProgTrialSize = progTrialSize

// CachedPrograms is how many compiled programs p's cache holds.
func CachedPrograms(p *Program) int { return p.progs.len() }

// RecompiledPrograms is how many programs p compiled as it ran, its
// cache not holding them.
func RecompiledPrograms(p *Program) int { return p.progs.misses() }

// DecodeForTest is n's decoded step, decoding it now if it was left to
// its first run (CompileChecked).
func (n *Node) DecodeForTest() (Step, error) { return n.impl() }

// ImplCacheSize is how many decoded steps a program keeps that it can
// decode again (implCache).
const ImplCacheSize = implCacheSize

// KeepByLabel makes the runs of p keep their steps' states and visits by
// label, as for a plan whose steps are not numbered.
func KeepByLabel(p *Program) { p.slots = 0 }

// FirstsKept is how many checked decodes a plan compiled for its run
// keeps for its first steps.
func FirstsKept() int { return firstsKept }

// SetFirstsKept sets FirstsKept for the test t.
func SetFirstsKept(t *testing.T, n int) {
	old := firstsKept
	firstsKept = n
	t.Cleanup(func() { firstsKept = old })
}

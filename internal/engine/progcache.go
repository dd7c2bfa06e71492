package engine

import "github.com/expr-lang/expr/vm"

// progCacheSize bounds the compiled programs a plan keeps for the
// expressions it runs again: a loop's or a for_each's body. A program
// with its tree is 4.5 to 10 kilobytes.
const progCacheSize = 512

// progTrialSize bounds the programs a plan keeps of expressions run
// once so far (lru's trial): a 100k-step plan whose steps run once each
// keeps these few, not progCacheSize of them (5 MB of programs never run
// again, a twentieth of such a run's heap). An expression is compiled
// once more when it is run again after the trial dropped it; from then
// on it is kept.
const progTrialSize = 32

// progCache holds the most recently used compiled programs of a plan's
// expressions (Expr.program), shared by the scopes made from one
// (Scope.with). An expression whose program it dropped is compiled again
// from its source when next run.
type progCache = lru[progKey, *vm.Program]

type progKey struct {
	scope *Scope
	exprKey
}

func newProgCache() *progCache {
	return newTrialLRU[progKey, *vm.Program](progCacheSize, progTrialSize)
}

package engine

import "github.com/expr-lang/expr/vm"

// progCacheSize bounds the compiled programs a plan keeps. A program
// with its tree is about 4.5 kilobytes; a loop's or a for_each's body,
// run again and again, stays in a cache this size, and a 100k-step plan
// whose steps run once each holds 2 MB of them rather than all of them
// (at 2,048 the cache was 9 MB, a fifteenth of such a run's heap, of
// programs never run again).
const progCacheSize = 512

// progCache holds the most recently used compiled programs of a plan's
// expressions (Expr.program), shared by the scopes made from one
// (Scope.with). An expression whose program it dropped is compiled again
// from its source when next run.
type progCache = lru[progKey, *vm.Program]

type progKey struct {
	scope *Scope
	exprKey
}

func newProgCache(max int) *progCache { return newLRU[progKey, *vm.Program](max) }

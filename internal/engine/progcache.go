package engine

import "github.com/expr-lang/expr/vm"

// progCacheSize bounds the compiled programs a plan keeps. A program is
// about a kilobyte; a loop's or a for_each's body, run again and again,
// stays in a cache this size, and a 100k-step plan whose steps run once
// each holds a few megabytes of them rather than all of them.
const progCacheSize = 2048

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

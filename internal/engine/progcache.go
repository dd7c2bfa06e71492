package engine

import (
	"container/list"
	"sync"

	"github.com/expr-lang/expr/vm"
)

// progCacheSize bounds the compiled programs a plan keeps. A program is
// about a kilobyte; a loop's or a for_each's body, run again and again,
// stays in a cache this size, and a 100k-step plan whose steps run once
// each holds a few megabytes of them rather than all of them.
const progCacheSize = 2048

// progCache holds the most recently used compiled programs of a plan's
// expressions (Expr.program), shared by the scopes made from one
// (Scope.with). An expression whose program it dropped is compiled again
// from its source when next run.
type progCache struct {
	mu    sync.Mutex
	max   int
	m     map[progKey]*list.Element
	order list.List // of *progEntry, most recently used first
}

type progKey struct {
	scope *Scope
	exprKey
}

type progEntry struct {
	key  progKey
	prog *vm.Program
}

func newProgCache(max int) *progCache {
	return &progCache{max: max, m: map[progKey]*list.Element{}}
}

// get is the program cached for k, or nil.
func (c *progCache) get(k progKey) *vm.Program {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[k]
	if !ok {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*progEntry).prog
}

// put caches p for k, dropping the least recently used program beyond
// the bound.
func (c *progCache) put(k progKey, p *vm.Program) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, p)
}

// seed caches p for k while the cache has room: a plan being compiled
// keeps the programs of its first steps, the ones its run starts with.
func (c *progCache) seed(k progKey, p *vm.Program) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.order.Len() < c.max {
		c.putLocked(k, p)
	}
}

func (c *progCache) putLocked(k progKey, p *vm.Program) {
	if el, ok := c.m[k]; ok {
		el.Value.(*progEntry).prog = p
		c.order.MoveToFront(el)
		return
	}
	c.m[k] = c.order.PushFront(&progEntry{k, p})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.m, last.Value.(*progEntry).key)
	}
}

// len is the number of programs cached.
func (c *progCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

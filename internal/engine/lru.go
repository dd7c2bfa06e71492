package engine

import (
	"container/list"
	"sync"
)

// lru holds the most recently used values of a bounded set, safe for
// concurrent use: a plan's compiled expressions (progCache) and its
// decoded steps (implCache), each rebuilt from the plan when dropped.
//
// With a trial (newTrialLRU), a value put for the first time waits in a
// short list of its own, where being used again keeps it, and joins the
// main one only when it is put again after the trial list dropped it
// (its key remembered, without its value, among the ghosts): a loop's
// body, run again and again, is kept whatever its size, while a plan of
// 100k steps that each run once fills the main list with nothing. Moving
// a value on its first reuse would not do: one evaluation asks for its
// program twice. A value seeded while a plan compiles waits in the main
// list until its first use, then goes on trial.
type lru[K comparable, V any] struct {
	mu    sync.Mutex
	max   int
	m     map[K]*list.Element
	order list.List // of *lruEntry[K, V], most recently used first
	puts  int       // values put (not seeded): each a miss rebuilt

	trialMax int
	trial    list.List // as order, for values on trial
	ghosts   map[K]struct{}
	ghostAt  []K // the ghosts in the order they left, a ring
	ghostPos int
}

type lruEntry[K comparable, V any] struct {
	key   K
	val   V
	trial bool // in trial, not order
	seed  bool // seeded, not used yet
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, m: map[K]*list.Element{}}
}

// newTrialLRU is an lru of at most max values kept and trial values on
// trial; it remembers the keys of the last 2×max values the trial dropped.
func newTrialLRU[K comparable, V any](max, trial int) *lru[K, V] {
	c := newLRU[K, V](max)
	c.trialMax, c.ghosts, c.ghostAt = trial, map[K]struct{}{}, make([]K, 0, 2*max)
	return c
}

// get is the value cached for k.
func (c *lru[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	e := el.Value.(*lruEntry[K, V])
	switch {
	case e.seed && c.trialMax > 0:
		c.order.Remove(el)
		e.seed, e.trial = false, true
		c.m[k] = c.trial.PushFront(e)
		c.trimTrial()
	case e.trial:
		c.trial.MoveToFront(el)
	default:
		c.order.MoveToFront(el)
	}
	return e.val, true
}

// put caches v for k, dropping the least recently used beyond the bound.
func (c *lru[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.puts++
	c.putLocked(k, v)
}

// seed caches v for k while the cache has room: a plan being compiled
// keeps what its first steps need, the ones its run starts with.
func (c *lru[K, V]) seed(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; ok || c.order.Len() >= c.max {
		return
	}
	c.m[k] = c.order.PushFront(&lruEntry[K, V]{key: k, val: v, seed: c.trialMax > 0})
}

func (c *lru[K, V]) putLocked(k K, v V) {
	if el, ok := c.m[k]; ok {
		e := el.Value.(*lruEntry[K, V])
		e.val = v
		if e.trial {
			c.trial.MoveToFront(el)
		} else {
			c.order.MoveToFront(el)
		}
		return
	}
	if _, ghost := c.ghosts[k]; c.trialMax > 0 && !ghost {
		c.m[k] = c.trial.PushFront(&lruEntry[K, V]{key: k, val: v, trial: true})
		c.trimTrial()
		return
	}
	delete(c.ghosts, k) // its place in ghostAt is reused in turn
	c.m[k] = c.order.PushFront(&lruEntry[K, V]{key: k, val: v})
	for c.order.Len() > c.max {
		c.drop(&c.order)
	}
}

// trimTrial drops the values on trial beyond trialMax, remembering
// their keys.
func (c *lru[K, V]) trimTrial() {
	for c.trial.Len() > c.trialMax {
		c.ghost(c.drop(&c.trial))
	}
}

// drop removes the least recently used value of l and returns its key.
func (c *lru[K, V]) drop(l *list.List) K {
	last := l.Back()
	l.Remove(last)
	k := last.Value.(*lruEntry[K, V]).key
	delete(c.m, k)
	return k
}

// ghost remembers k, forgetting the oldest ghost beyond cap(ghostAt).
func (c *lru[K, V]) ghost(k K) {
	if len(c.ghostAt) < cap(c.ghostAt) {
		c.ghostAt = append(c.ghostAt, k)
	} else {
		delete(c.ghosts, c.ghostAt[c.ghostPos])
		c.ghostAt[c.ghostPos] = k
		c.ghostPos = (c.ghostPos + 1) % len(c.ghostAt)
	}
	c.ghosts[k] = struct{}{}
}

// len is the number of values cached.
func (c *lru[K, V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len() + c.trial.Len()
}

// misses is the number of values put: each was not found, and rebuilt.
func (c *lru[K, V]) misses() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.puts
}

package engine

import (
	"container/list"
	"sync"
)

// lru holds the most recently used values of a bounded set, safe for
// concurrent use: a plan's compiled expressions (progCache) and its
// decoded steps (implCache), each rebuilt from the plan when dropped.
type lru[K comparable, V any] struct {
	mu    sync.Mutex
	max   int
	m     map[K]*list.Element
	order list.List // of *lruEntry[K, V], most recently used first
}

type lruEntry[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, m: map[K]*list.Element{}}
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
	c.order.MoveToFront(el)
	return el.Value.(*lruEntry[K, V]).val, true
}

// put caches v for k, dropping the least recently used beyond the bound.
func (c *lru[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, v)
}

// seed caches v for k while the cache has room: a plan being compiled
// keeps what its first steps need, the ones its run starts with.
func (c *lru[K, V]) seed(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.order.Len() < c.max {
		c.putLocked(k, v)
	}
}

func (c *lru[K, V]) putLocked(k K, v V) {
	if el, ok := c.m[k]; ok {
		el.Value.(*lruEntry[K, V]).val = v
		c.order.MoveToFront(el)
		return
	}
	c.m[k] = c.order.PushFront(&lruEntry[K, V]{k, v})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.m, last.Value.(*lruEntry[K, V]).key)
	}
}

// len is the number of values cached.
func (c *lru[K, V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// Package idlecache keeps per-endpoint clients (an agent's HTTPS client, a
// DNS client's kept TCP connection) and closes the ones nobody used for a
// while. Endpoints come and go: every roll gives the pods new IPs and a
// deleted cluster leaves its Service address behind, so a map that only
// grows would hold connections and memory for as long as the operator runs.
package idlecache

import (
	"sync"
	"time"
)

// Cache maps keys to values and closes values idle for longer than Idle.
// Idle values are found by a sweep that runs, at most once per Idle/4, on
// Get and Put: no goroutine of its own. The zero value is not usable; use
// New.
type Cache[V any] struct {
	idle  time.Duration
	close func(V)
	now   func() time.Time

	mu        sync.Mutex
	entries   map[string]*entry[V]
	lastSweep time.Time
}

type entry[V any] struct {
	value    V
	lastUsed time.Time
}

// New returns a cache that calls closeFn on every value it drops (idle, or
// replaced by Put). now is the clock; nil means time.Now.
func New[V any](idle time.Duration, closeFn func(V), now func() time.Time) *Cache[V] {
	if now == nil {
		now = time.Now
	}
	return &Cache[V]{idle: idle, close: closeFn, now: now, entries: map[string]*entry[V]{}, lastSweep: now()}
}

// Get returns the value for key and marks it used.
func (c *Cache[V]) Get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.sweep(now)
	e, ok := c.entries[key]
	if !ok {
		var zero V
		return zero, false
	}
	e.lastUsed = now
	return e.value, true
}

// Put stores v under key, closing the value it replaces.
func (c *Cache[V]) Put(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.sweep(now)
	if old, ok := c.entries[key]; ok {
		c.close(old.value)
	}
	c.entries[key] = &entry[V]{value: v, lastUsed: now}
}

// Len is the number of values held.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// sweep closes and drops idle values; c.mu is held.
func (c *Cache[V]) sweep(now time.Time) {
	if now.Sub(c.lastSweep) < c.idle/4 {
		return
	}
	c.lastSweep = now
	for k, e := range c.entries {
		if now.Sub(e.lastUsed) > c.idle {
			c.close(e.value)
			delete(c.entries, k)
		}
	}
}

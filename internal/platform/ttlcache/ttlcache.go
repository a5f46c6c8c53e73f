// Package ttlcache keeps answers of hot reads in memory for a short time.
//
// It is built for caches that must never serve an answer older than the last
// invalidation: every change that affects a cached answer drops it (Drop or
// Clear), and a read that raced with a change (read the database before the
// change committed, would store after the drop) does not store its answer,
// because the cache's epoch moved between Epoch and Put. The TTL bounds only
// what a lost invalidation could leave.
package ttlcache

import (
	"sync"
	"sync/atomic"
	"time"
)

// Cache maps string keys to values of type V. A nil *Cache is a cache that is
// off: Get misses, Put and Drop do nothing.
type Cache[V any] struct {
	ttl time.Duration
	max int

	mu      sync.RWMutex
	entries map[string]entry[V]
	// epoch counts invalidations.
	epoch atomic.Uint64
}

type entry[V any] struct {
	v       V
	expires time.Time
}

// New returns a cache whose entries live at most ttl and which holds at most
// max entries; a ttl of zero or less returns nil, the cache that is off.
func New[V any](ttl time.Duration, max int) *Cache[V] {
	if ttl <= 0 {
		return nil
	}
	return &Cache[V]{ttl: ttl, max: max, entries: map[string]entry[V]{}}
}

// Get returns the value under key if it has not expired at now. Values are
// returned by copy: keep V free of pointers the caller could write through.
func (c *Cache[V]) Get(key string, now time.Time) (V, bool) {
	var zero V
	if c == nil {
		return zero, false
	}
	c.mu.RLock()
	e, ok := c.entries[key]
	c.mu.RUnlock()
	if !ok || !now.Before(e.expires) {
		return zero, false
	}
	return e.v, true
}

// Epoch is taken before the read whose answer Put stores.
func (c *Cache[V]) Epoch() uint64 {
	if c == nil {
		return 0
	}
	return c.epoch.Load()
}

// Put stores v under key until now plus the TTL, or until limit if that is
// sooner (the zero time: no limit), unless an invalidation happened since
// epoch was taken.
func (c *Cache[V]) Put(key string, v V, now, limit time.Time, epoch uint64) {
	if c == nil {
		return
	}
	exp := now.Add(c.ttl)
	if !limit.IsZero() && limit.Before(exp) {
		exp = limit
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch.Load() != epoch {
		return
	}
	if len(c.entries) >= c.max {
		// Crude but bounded: start over rather than track recency.
		c.entries = map[string]entry[V]{}
	}
	c.entries[key] = entry[V]{v: v, expires: exp}
}

// Drop forgets every entry whose value matches.
func (c *Cache[V]) Drop(match func(*V) bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch.Add(1)
	for k, e := range c.entries {
		if match(&e.v) {
			delete(c.entries, k)
		}
	}
}

// Clear forgets every entry.
func (c *Cache[V]) Clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch.Add(1)
	c.entries = map[string]entry[V]{}
}

// Len is the number of entries held, expired or not.
func (c *Cache[V]) Len() int {
	if c == nil {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}

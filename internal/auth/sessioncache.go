package auth

import (
	"sync"
	"sync/atomic"
	"time"

	"slipway/internal/platform/actor"
)

// sessionCache keeps recently authenticated sessions in memory for a short
// time, so the hot path (every request) skips the database. Every change
// that affects a cached answer drops the entry at once (logout, password
// change, approval, rejection, profile edits), here and, through the
// database's notifications, on every other replica; the TTL only bounds
// what a lost notification could leave (and a lost one empties the cache:
// see Service.Run).
type sessionCache struct {
	ttl time.Duration
	max int

	mu      sync.RWMutex
	entries map[string]cacheEntry // by token hash
	// epoch counts invalidations. A lookup that raced with one (read the
	// database before a change committed, would store after the drop) sees
	// the epoch moved and does not store its stale answer.
	epoch atomic.Uint64
}

type cacheEntry struct {
	user    actor.User
	expires time.Time
}

func newSessionCache(ttl time.Duration, max int) *sessionCache {
	if ttl <= 0 {
		return nil
	}
	return &sessionCache{ttl: ttl, max: max, entries: map[string]cacheEntry{}}
}

// get returns a copy of the cached user, so callers cannot alter the entry.
func (c *sessionCache) get(tokenHash string, now time.Time) (*actor.User, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.RLock()
	e, ok := c.entries[tokenHash]
	c.mu.RUnlock()
	if !ok || !now.Before(e.expires) {
		return nil, false
	}
	u := e.user
	return &u, true
}

// currentEpoch is taken before the database read whose answer put stores.
func (c *sessionCache) currentEpoch() uint64 {
	if c == nil {
		return 0
	}
	return c.epoch.Load()
}

func (c *sessionCache) put(tokenHash string, u *actor.User, sessionExpires, now time.Time, epoch uint64) {
	if c == nil {
		return
	}
	exp := now.Add(c.ttl)
	if sessionExpires.Before(exp) {
		exp = sessionExpires
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch.Load() != epoch {
		return
	}
	if len(c.entries) >= c.max {
		// Crude but bounded: start over rather than track recency.
		c.entries = map[string]cacheEntry{}
	}
	c.entries[tokenHash] = cacheEntry{user: *u, expires: exp}
}

// dropUser forgets every session of the user.
func (c *sessionCache) dropUser(userID string) {
	c.drop(func(u *actor.User) bool { return u.ID == userID })
}

// dropSession forgets one session.
func (c *sessionCache) dropSession(sessionID string) {
	c.drop(func(u *actor.User) bool { return u.SessionID == sessionID })
}

func (c *sessionCache) drop(match func(*actor.User) bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch.Add(1)
	for h, e := range c.entries {
		if match(&e.user) {
			delete(c.entries, h)
		}
	}
}

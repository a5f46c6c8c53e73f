package ttlcache_test

import (
	"testing"
	"time"

	"slipway/internal/platform/ttlcache"
)

type user struct{ ID, Session, Name string }

func TestCache(t *testing.T) {
	now := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	c := ttlcache.New[user](10*time.Second, 3)
	c.Put("h1", user{"ann", "s1", "Ann"}, now, now.Add(time.Hour), c.Epoch())

	got, ok := c.Get("h1", now.Add(9*time.Second))
	if !ok || got.Name != "Ann" {
		t.Fatalf("fresh entry: %v %v", got, ok)
	}
	got.Name = "changed by a caller"
	if again, _ := c.Get("h1", now); again.Name != "Ann" {
		t.Fatal("a caller changed the cached entry")
	}
	if _, ok := c.Get("h1", now.Add(10*time.Second)); ok {
		t.Fatal("an entry outlived the TTL")
	}

	// A limit sooner than the TTL ends the entry sooner; no limit is the TTL.
	c.Put("h2", user{"bob", "s2", ""}, now, now.Add(2*time.Second), c.Epoch())
	if _, ok := c.Get("h2", now.Add(2*time.Second)); ok {
		t.Fatal("an entry outlived its limit")
	}
	c.Put("h2", user{"bob", "s2", ""}, now, time.Time{}, c.Epoch())
	if _, ok := c.Get("h2", now.Add(9*time.Second)); !ok {
		t.Fatal("an entry without a limit expired before the TTL")
	}

	// Drop forgets what matches and only that.
	c.Put("h3", user{"ann", "s3", ""}, now, time.Time{}, c.Epoch())
	c.Drop(func(u *user) bool { return u.ID == "ann" })
	if _, ok := c.Get("h3", now); ok {
		t.Fatal("Drop kept a match")
	}
	if _, ok := c.Get("h2", now); !ok {
		t.Fatal("Drop forgot what did not match")
	}
	c.Clear()
	if _, ok := c.Get("h2", now); ok || c.Len() != 0 {
		t.Fatal("Clear kept an entry")
	}

	// A read that started before an invalidation does not store its
	// (possibly stale) answer.
	for _, inval := range []func(){c.Clear, func() { c.Drop(func(*user) bool { return false }) }} {
		epoch := c.Epoch()
		inval()
		c.Put("h5", user{"dee", "s5", ""}, now, time.Time{}, epoch)
		if _, ok := c.Get("h5", now); ok {
			t.Fatal("a read that raced an invalidation was cached")
		}
	}

	// The cache stays bounded.
	for i, h := range []string{"a", "b", "c", "d", "e"} {
		c.Put(h, user{ID: h}, now, time.Time{}, c.Epoch())
		if c.Len() > 3 {
			t.Fatalf("after %d puts the cache holds %d entries", i+1, c.Len())
		}
	}

	// A zero TTL is no cache at all.
	off := ttlcache.New[user](0, 10)
	off.Put("x", user{ID: "x"}, now, time.Time{}, off.Epoch())
	off.Drop(func(*user) bool { return true })
	off.Clear()
	if _, ok := off.Get("x", now); ok || off.Len() != 0 {
		t.Fatal("a disabled cache returned an entry")
	}
}

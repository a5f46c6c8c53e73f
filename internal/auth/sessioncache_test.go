package auth

import (
	"testing"
	"time"

	"slipway/internal/platform/actor"
)

func TestSessionCache(t *testing.T) {
	now := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	c := newSessionCache(10*time.Second, 3)
	ann := &actor.User{ID: "ann", SessionID: "s1", DisplayName: "Ann"}
	c.put("h1", ann, now.Add(time.Hour), now, c.currentEpoch())

	got, ok := c.get("h1", now.Add(9*time.Second))
	if !ok || got.DisplayName != "Ann" {
		t.Fatalf("fresh entry: %v %v", got, ok)
	}
	got.DisplayName = "changed by a caller"
	if again, _ := c.get("h1", now); again.DisplayName != "Ann" {
		t.Fatal("a caller changed the cached entry")
	}
	if _, ok := c.get("h1", now.Add(10*time.Second)); ok {
		t.Fatal("an entry outlived the TTL")
	}

	// A session that ends sooner than the TTL ends the entry too.
	c.put("h2", &actor.User{ID: "bob", SessionID: "s2"}, now.Add(2*time.Second), now, c.currentEpoch())
	if _, ok := c.get("h2", now.Add(2*time.Second)); ok {
		t.Fatal("an entry outlived its session")
	}

	// Invalidation by user and by session.
	c.put("h3", &actor.User{ID: "ann", SessionID: "s3"}, now.Add(time.Hour), now, c.currentEpoch())
	c.dropUser("ann")
	if _, ok := c.get("h1", now); ok {
		t.Fatal("dropUser kept a session")
	}
	if _, ok := c.get("h3", now); ok {
		t.Fatal("dropUser kept a session")
	}
	c.put("h4", &actor.User{ID: "cy", SessionID: "s4"}, now.Add(time.Hour), now, c.currentEpoch())
	c.dropSession("s4")
	if _, ok := c.get("h4", now); ok {
		t.Fatal("dropSession kept the session")
	}

	// A lookup that started before an invalidation does not store its
	// (possibly stale) answer.
	epoch := c.currentEpoch()
	c.dropUser("someone")
	c.put("h5", &actor.User{ID: "dee", SessionID: "s5"}, now.Add(time.Hour), now, epoch)
	if _, ok := c.get("h5", now); ok {
		t.Fatal("a lookup that raced an invalidation was cached")
	}

	// The cache stays bounded.
	for i, h := range []string{"a", "b", "c", "d", "e"} {
		c.put(h, &actor.User{ID: h, SessionID: h}, now.Add(time.Hour), now, c.currentEpoch())
		if len(c.entries) > 3 {
			t.Fatalf("after %d puts the cache holds %d entries", i+1, len(c.entries))
		}
	}

	// A zero TTL is no cache at all.
	var off *sessionCache = newSessionCache(0, 10)
	off.put("x", ann, now.Add(time.Hour), now, off.currentEpoch())
	if _, ok := off.get("x", now); ok {
		t.Fatal("a disabled cache returned an entry")
	}
}

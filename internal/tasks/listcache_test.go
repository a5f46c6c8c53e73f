package tasks

import (
	"bytes"
	"testing"
)

// The list cache serves a page only at the version it was read at, keeps
// the later of two versions, refuses pages over its size and stays within
// its byte budget.
func TestListCacheBounds(t *testing.T) {
	c := newListCache()
	k := keyOf("ws", ListFilter{Limit: 20})
	c.put(k, 3, []byte("three"))
	if p, ok := c.get(k, 3); !ok || string(p) != "three" {
		t.Fatalf("get at 3 = %q %v", p, ok)
	}
	if _, ok := c.get(k, 4); ok {
		t.Fatal("a page of version 3 served at version 4")
	}
	c.put(k, 2, []byte("two")) // a slower reader of an older version
	if p, ok := c.get(k, 3); !ok || string(p) != "three" {
		t.Fatalf("an older page replaced a newer one: %q %v", p, ok)
	}
	c.put(k, 5, []byte("five"))
	if p, ok := c.get(k, 5); !ok || string(p) != "five" || c.bytes != 4 {
		t.Fatalf("get at 5 = %q %v, %d bytes kept", p, ok, c.bytes)
	}
	c.put(keyOf("ws", ListFilter{Limit: 500}), 5, make([]byte, maxListPageBytes+1))
	if len(c.pages) != 1 {
		t.Fatalf("%d pages kept, want the long page refused", len(c.pages))
	}
	page := bytes.Repeat([]byte("x"), maxListPageBytes)
	for i := range 2 * maxListBytes / maxListPageBytes {
		c.put(keyOf("ws", ListFilter{Limit: 20, Offset: i + 1}), 1, page)
		if c.bytes > maxListBytes {
			t.Fatalf("%d bytes kept after %d pages, budget %d", c.bytes, i+1, maxListBytes)
		}
	}
	sum := 0
	for _, p := range c.pages {
		sum += len(p.json)
	}
	if sum != c.bytes || len(c.pages) != maxListBytes/maxListPageBytes {
		t.Fatalf("%d pages of %d bytes, counted %d", len(c.pages), sum, c.bytes)
	}
}

// Package clock gives services an injectable source of time. Every time it
// hands out is UTC and truncated to microseconds, the precision both
// PostgreSQL and our SQLite encoding keep, so a value survives a round trip.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// System is the real clock.
type System struct{}

// Now returns the current time in UTC at microsecond precision.
func (System) Now() time.Time { return Normalize(time.Now()) }

// Normalize converts t to UTC and drops sub-microsecond precision.
func Normalize(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// Fake is a settable clock for tests.
type Fake struct {
	mu  sync.Mutex
	now time.Time
}

// NewFake starts a fake clock at t.
func NewFake(t time.Time) *Fake { return &Fake{now: Normalize(t)} }

// Now returns the fake's current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the fake clock forward by d.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = Normalize(f.now.Add(d))
}

package dispatch

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"slipway/internal/platform/jobs"
	"slipway/internal/workport"
)

// fleet wakes the runners waiting in this replica's long polls. One loop
// reads the waiting fleet work once per notification (and per poll tick, the
// fallback for a lost one) and wakes, for each job, one waiting runner whose
// match admits it — instead of every waiting runner querying the database
// on every enqueue (a thousand idle runners would otherwise cost a thousand
// queries per task, and a thousand a second while idle).
type fleet struct {
	mu      sync.Mutex
	waiting map[*waiter]struct{}
}

// waiter is one runner's long poll.
type waiter struct {
	match *jobs.Match // nil: it may claim nothing now (never woken)
	wake  chan struct{}
}

func (f *fleet) add(m *jobs.Match) *waiter {
	w := &waiter{match: m, wake: make(chan struct{}, 1)}
	f.mu.Lock()
	if f.waiting == nil {
		f.waiting = map[*waiter]struct{}{}
	}
	f.waiting[w] = struct{}{}
	f.mu.Unlock()
	return w
}

func (f *fleet) remove(w *waiter) {
	if w == nil {
		return
	}
	f.mu.Lock()
	delete(f.waiting, w)
	f.mu.Unlock()
}

// candidates are the waiters that may claim something, in random order (no
// runner is always first).
func (f *fleet) candidates() []*waiter {
	f.mu.Lock()
	out := make([]*waiter, 0, len(f.waiting))
	for w := range f.waiting {
		if w.match != nil {
			out = append(out, w)
		}
	}
	f.mu.Unlock()
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// TopicRematch tells every replica that a runner's grant or status
// changed: its waiting long polls look at what they may claim again.
const TopicRematch = "runners"

// wakeAll wakes every waiter (they read their match again).
func (f *fleet) wakeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for w := range f.waiting {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// recheck wakes the waiters that may claim nothing (disabled, draining,
// offline when they asked), so that they see an enable at the next tick
// rather than at the end of their long poll.
func (f *fleet) recheck() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for w := range f.waiting {
		if w.match == nil {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
}

// fleetBatch bounds the jobs one matchmaking round looks at.
const fleetBatch = 256

// matchmake wakes one waiting runner for each waiting fleet job it admits.
func (d *Dispatcher) matchmake(ctx context.Context) error {
	ws := d.fleet.candidates()
	if len(ws) == 0 {
		return nil
	}
	waiting, err := d.queue.FleetWaiting(ctx, d.kinds([]string{workport.WorkAgent, workport.WorkScript}), fleetBatch)
	if err != nil {
		return err
	}
	for _, j := range waiting {
		for i, w := range ws {
			if w == nil || !w.match.Admits(j.OrganizationID, j.WorkspaceID, j.Labels) {
				continue
			}
			select {
			case w.wake <- struct{}{}:
			default:
			}
			ws[i] = nil // one job per runner per round
			break
		}
	}
	return nil
}

// runFleet keeps matchmaking until ctx ends.
func (d *Dispatcher) runFleet(ctx context.Context) {
	sub := d.bus.Subscribe(jobs.TopicQueued)
	defer sub.Close()
	rematch := d.bus.Subscribe(TopicRematch)
	defer rematch.Close()
	tick := time.NewTicker(d.cfg.Poll)
	defer tick.Stop()
	// Work queued before the subscriptions above went unheard: look once.
	if err := d.matchmake(ctx); err != nil && ctx.Err() == nil {
		d.log.Error("waking runners for waiting work failed", "err", err)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-rematch.C:
			d.fleet.wakeAll()
			continue
		case <-sub.C:
			// A burst of notifications is one round.
			for drained := false; !drained; {
				select {
				case <-sub.C:
				default:
					drained = true
				}
			}
		case <-tick.C:
			d.fleet.recheck()
		}
		if err := d.matchmake(ctx); err != nil && ctx.Err() == nil {
			d.log.Error("waking runners for waiting work failed", "err", err)
		}
	}
}

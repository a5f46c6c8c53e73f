package worker

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"slipway/internal/platform/redact"
)

// eventWriter sends a run's events to the hub in numbered batches: Add
// queues (redacted at once), and a flusher sends every flushEvery or when
// maxBatch events wait, so a chatty agent costs one append per batch instead
// of one per line. A batch that fails is sent again under the same number
// (the hub stores it once); once the lease is lost, events are dropped.
type eventWriter struct {
	port   Port
	lease  Lease
	redact *redact.Redactor

	mu       sync.Mutex
	pending  []Event
	inflight *Batch // a batch that failed and is sent again first
	seq      int64
	lost     bool
	lastErr  error
	closed   bool

	kick    chan struct{}
	done    chan struct{}
	stopped chan struct{}
}

const (
	flushEvery = 50 * time.Millisecond
	maxBatch   = 500
)

// newEventWriter starts a writer whose first batch is numbered after.
func newEventWriter(port Port, l Lease, r *redact.Redactor, after int64) *eventWriter {
	w := &eventWriter{port: port, lease: l, redact: r, seq: after, kick: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	go w.loop()
	return w
}

// Add queues one event; payload must be a JSON object.
func (w *eventWriter) Add(eventType string, payload []byte) {
	e := Event{Type: eventType, Payload: w.redact.JSON(payload), At: time.Now().UTC().Truncate(time.Microsecond)}
	w.mu.Lock()
	if w.lost || w.closed {
		w.mu.Unlock()
		return
	}
	w.pending = append(w.pending, e)
	full := len(w.pending) >= maxBatch
	w.mu.Unlock()
	if full {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// AddValue queues an event whose payload is v marshalled.
func (w *eventWriter) AddValue(eventType string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{}`)
	}
	w.Add(eventType, b)
}

// Lost reports whether the hub said the lease is gone.
func (w *eventWriter) Lost() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lost
}

func (w *eventWriter) loop() {
	defer close(w.stopped)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-w.kick:
		case <-w.done:
			// Last chance for everything queued, including a batch that
			// failed before.
			for i := 0; i < 3 && w.flush(); i++ {
				time.Sleep(100 * time.Millisecond)
			}
			return
		}
		w.flush()
	}
}

// flush sends what waits; it reports whether something is left to send
// after a failure.
func (w *eventWriter) flush() (retry bool) {
	w.mu.Lock()
	if w.inflight == nil && len(w.pending) > 0 {
		w.seq++
		w.inflight = &Batch{Seq: w.seq, Events: w.pending}
		w.pending = nil
	}
	b := w.inflight
	w.mu.Unlock()
	if b == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := w.port.Append(ctx, w.lease, *b)
	cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case errors.Is(err, ErrLeaseLost):
		w.lost, w.inflight, w.pending = true, nil, nil
		return false
	case err != nil:
		w.lastErr = err
		return true
	}
	w.inflight = nil
	return len(w.pending) > 0
}

// Close sends what is queued and stops the flusher; it returns the last
// send error if something could not be sent.
func (w *eventWriter) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	close(w.done)
	<-w.stopped
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inflight != nil || len(w.pending) > 0 {
		return w.lastErr
	}
	return nil
}

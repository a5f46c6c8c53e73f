package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
)

// Redactor removes secrets from event payloads before they are stored.
type Redactor struct {
	// pairs of (needle, replacement) for strings.NewReplacer
	r *strings.Replacer
}

// Redacted is what a secret becomes in stored events.
const Redacted = "[REDACTED]"

// NewRedactor redacts each secret as it appears raw and as it appears
// inside a JSON string (escaped). Secrets shorter than 6 bytes are ignored:
// they would shred ordinary text and protect nothing.
func NewRedactor(secrets []string) *Redactor {
	var pairs []string
	for _, s := range secrets {
		if len(s) < 6 {
			continue
		}
		pairs = append(pairs, s, Redacted)
		if b, err := json.Marshal(s); err == nil {
			if esc := string(b[1 : len(b)-1]); esc != s {
				pairs = append(pairs, esc, Redacted)
			}
		}
		// Multi-line secrets (keys) also leak line by line.
		for _, line := range strings.Split(s, "\n") {
			if line = strings.TrimSpace(line); len(line) >= 16 && line != s {
				pairs = append(pairs, line, Redacted)
			}
		}
	}
	if len(pairs) == 0 {
		return &Redactor{}
	}
	return &Redactor{r: strings.NewReplacer(pairs...)}
}

// Payload returns a JSON payload safe to store: secrets redacted and NUL
// characters (which PostgreSQL's jsonb refuses) replaced.
func (r *Redactor) Payload(p []byte) []byte {
	if r.r != nil {
		p = []byte(r.r.Replace(string(p)))
	}
	if bytes.Contains(p, []byte(`\u0000`)) {
		var v any
		if json.Unmarshal(p, &v) == nil {
			if b, err := json.Marshal(replaceNUL(v)); err == nil {
				p = b
			}
		}
	}
	return p
}

func replaceNUL(v any) any {
	switch t := v.(type) {
	case string:
		return strings.ReplaceAll(t, "\x00", "\uFFFD")
	case []any:
		for i := range t {
			t[i] = replaceNUL(t[i])
		}
	case map[string]any:
		for k, e := range t {
			t[k] = replaceNUL(e)
		}
	}
	return v
}

// Text redacts a plain string (errors, summaries).
func (r *Redactor) Text(s string) string {
	if r.r == nil {
		return s
	}
	return r.r.Replace(s)
}

// eventLog appends a task's events in batches: Add queues, and a flusher
// writes every flushEvery or when the batch reaches maxBatch, so a chatty
// agent costs one transaction per batch instead of one per line.
type eventLog struct {
	db       *db.DB
	clock    clock.Clock
	taskID   string
	runID    *string
	redact   *Redactor
	mu       sync.Mutex
	pending  []pendingEvent
	kick     chan struct{}
	done     chan struct{}
	stopped  chan struct{}
	closed   bool
	lastErr  error
	onAppend func() // tests observe flushes
}

const (
	flushEvery = 50 * time.Millisecond
	maxBatch   = 500
)

func newEventLog(d *db.DB, clk clock.Clock, taskID string, runID *string, r *Redactor) *eventLog {
	l := &eventLog{db: d, clock: clk, taskID: taskID, runID: runID, redact: r, kick: make(chan struct{}, 1), done: make(chan struct{}),
		stopped: make(chan struct{})}
	go l.loop()
	return l
}

// Add queues one event; payload must be a JSON object.
func (l *eventLog) Add(eventType string, payload []byte) {
	l.mu.Lock()
	l.pending = append(l.pending, pendingEvent{RunID: l.runID, Type: eventType, Payload: l.redact.Payload(payload), At: l.clock.Now()})
	full := len(l.pending) >= maxBatch
	l.mu.Unlock()
	if full {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

// AddValue queues an event whose payload is v marshalled.
func (l *eventLog) AddValue(eventType string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{}`)
	}
	l.Add(eventType, b)
}

func (l *eventLog) loop() {
	defer close(l.stopped)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-l.kick:
		case <-l.done:
			l.flush()
			return
		}
		l.flush()
	}
}

func (l *eventLog) flush() {
	l.mu.Lock()
	batch := l.pending
	l.pending = nil
	l.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	err := l.db.Tx(context.Background(), func(tx *db.Tx) error {
		_, err := appendEvents(context.Background(), l.db, tx, l.taskID, batch)
		return err
	})
	if err != nil {
		l.mu.Lock()
		l.lastErr = err
		l.mu.Unlock()
	}
	if l.onAppend != nil {
		l.onAppend()
	}
}

// Close flushes what is queued and stops the flusher; it returns the last
// append error, if any.
func (l *eventLog) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return l.lastErr
	}
	l.closed = true
	l.mu.Unlock()
	close(l.done)
	<-l.stopped // the loop returns after its final flush
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastErr
}

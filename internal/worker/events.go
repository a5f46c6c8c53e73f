package worker

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
	"unicode/utf8"

	"slipway/internal/agents/protocol"
	"slipway/internal/platform/redact"
	"slipway/internal/workport"
)

// OutputLimits bound what one run stores of what its agent or script
// prints (log lines, messages, tool calls and results). Past Bytes or Lines
// the rest is dropped after one output_truncated event, and the work goes
// on; a line longer than Line is stored in pieces.
type OutputLimits struct {
	Bytes int64
	Lines int64
	Line  int
}

// Defaults that fit a real build log.
const (
	DefaultOutputBytes = 16 << 20
	DefaultOutputLines = 200_000
	DefaultOutputLine  = 64 << 10
)

func (l OutputLimits) withDefaults() OutputLimits {
	if l.Bytes <= 0 {
		l.Bytes = DefaultOutputBytes
	}
	if l.Lines <= 0 {
		l.Lines = DefaultOutputLines
	}
	if l.Line <= 0 {
		l.Line = DefaultOutputLine
	}
	return l
}

// EventOutputTruncated says a run's output reached its limit.
const EventOutputTruncated = protocol.OutputTruncated

// eventWriter sends a run's events to the hub in numbered batches: Add
// queues (redacted at once), and a flusher sends every flushEvery or when
// maxBatch events (or batchBytes) wait, so a chatty agent costs one append
// per batch instead of one per line. Past maxPending bytes queued, Add waits
// for the flusher (small batches keep the live heap, and so the server's
// memory under a flood, small): an agent that prints faster than the hub stores is slowed
// down (its pipe fills) instead of filling the worker's memory. A batch that
// fails is sent again under the same number (the hub stores it once); once
// the lease is lost, events are dropped.
type eventWriter struct {
	// ctx is what every append is sent under (the work's span), never
	// cancelled: the last batches go after the work stopped.
	ctx    context.Context
	port   workport.Port
	lease  workport.Lease
	redact *redact.Redactor
	limits OutputLimits

	mu       sync.Mutex
	drained  *sync.Cond // signalled when pending shrinks or the writer ends
	pending  []workport.Event
	bytes    int             // payload bytes pending
	inflight *workport.Batch // a batch that failed and is sent again first
	seq      int64
	lost     bool
	lastErr  error
	closed   bool
	// abandoned: the work is being stopped (its context ended); Add no
	// longer waits for the hub, which may be what is gone.
	abandoned bool
	// What the run's output has stored so far, and whether it was cut.
	outBytes, outLines int64
	truncated          bool

	kick    chan struct{}
	done    chan struct{}
	stopped chan struct{}
}

const (
	flushEvery = 50 * time.Millisecond
	maxBatch   = 500
	batchBytes = 128 << 10
	maxPending = 512 << 10
)

// newEventWriter starts a writer whose first batch is numbered after.
func newEventWriter(ctx context.Context, port workport.Port, l workport.Lease, r *redact.Redactor, after int64, limits OutputLimits) *eventWriter {
	w := &eventWriter{ctx: context.WithoutCancel(ctx), port: port, lease: l, redact: r, limits: limits.withDefaults(), seq: after,
		kick: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	w.drained = sync.NewCond(&w.mu)
	go w.loop()
	return w
}

// Add queues one event; payload must be a JSON object. Output (what the
// agent printed) counts toward the run's limits.
func (w *eventWriter) Add(eventType string, payload []byte) {
	if protocol.IsOutput(eventType) && w.Truncated() {
		return
	}
	e := workport.Event{Type: eventType, Payload: w.redact.JSON(payload), At: time.Now().UTC().Truncate(time.Microsecond)}
	w.mu.Lock()
	for w.bytes > maxPending && !w.lost && !w.closed && !w.abandoned {
		w.kickFlusher()
		w.drained.Wait()
	}
	if w.lost || w.closed {
		w.mu.Unlock()
		return
	}
	if protocol.IsOutput(eventType) {
		if w.truncated {
			w.mu.Unlock()
			return
		}
		if w.outBytes+int64(len(e.Payload)) > w.limits.Bytes || w.outLines+1 > w.limits.Lines {
			w.truncated = true
			b, _ := json.Marshal(map[string]any{"stored_bytes": w.outBytes, "stored_lines": w.outLines,
				"max_bytes": w.limits.Bytes, "max_lines": w.limits.Lines})
			e = workport.Event{Type: EventOutputTruncated, Payload: b, At: e.At}
		} else {
			w.outBytes += int64(len(e.Payload))
			w.outLines++
		}
	}
	w.pending = append(w.pending, e)
	w.bytes += len(e.Payload)
	full := len(w.pending) >= maxBatch || w.bytes >= batchBytes
	w.mu.Unlock()
	if full {
		w.kickFlusher()
	}
}

// abandon stops Add from waiting for the hub: the work is being stopped
// (the lease lost, a cancel, a shutdown), and its output readers must end.
func (w *eventWriter) abandon() {
	w.mu.Lock()
	w.abandoned = true
	w.drained.Broadcast()
	w.mu.Unlock()
}

func (w *eventWriter) kickFlusher() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Line queues a line of plain output (stream "" for the agent's protocol
// stream) as log events, in pieces of at most the line limit.
func (w *eventWriter) Line(stream string, line []byte) {
	if w.Truncated() {
		return // dropped anyway: not even encoded (most of a flood)
	}
	for len(line) > 0 {
		n := min(len(line), w.limits.Line)
		for n < len(line) && n > 0 && !utf8.RuneStart(line[n]) {
			n-- // not inside a character
		}
		if n == 0 {
			n = min(len(line), w.limits.Line)
		}
		w.AddValue(protocol.OutLog, logLine{Line: string(line[:n]), Stream: stream})
		line = line[n:]
	}
}

// logLine is a log event's payload.
type logLine struct {
	Line   string `json:"line"`
	Stream string `json:"stream,omitempty"`
}

// Truncated reports whether the run's output reached its limit.
func (w *eventWriter) Truncated() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.truncated
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
		w.inflight = &workport.Batch{Seq: w.seq, Events: w.pending}
		w.pending, w.bytes = nil, 0
		w.drained.Broadcast()
	}
	b := w.inflight
	w.mu.Unlock()
	if b == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
	err := w.port.Append(ctx, w.lease, *b)
	cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case errors.Is(err, workport.ErrLeaseLost):
		w.lost, w.inflight, w.pending, w.bytes = true, nil, nil, 0
		w.drained.Broadcast()
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
	w.drained.Broadcast()
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

// Package pubsub carries small notifications (a job was queued, cancel this
// run, forget this session) between the parts of one process and, on
// PostgreSQL, between every replica on the database: LISTEN/NOTIFY on one
// channel, with topics multiplexed in the payload. SQLite has one process per
// database file, so there the bus is in-process only.
//
// Notifications are hints that make things fast, never the only way state
// travels: a subscriber that may have missed some (the database connection
// dropped, or it fell behind) receives a Reset message and rebuilds what it
// derived from earlier ones.
package pubsub

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"slipway/internal/platform/db"
)

// channel is the one PostgreSQL channel Slipway listens on.
const channel = "slipway"

// MaxPayload bounds topic plus payload: PostgreSQL refuses NOTIFY payloads
// of 8000 bytes or more.
const MaxPayload = 7900

// Message is one notification.
type Message struct {
	Topic   string
	Payload string
	// Reset means messages of this topic may have been lost since the last
	// one delivered: state derived from them must be rebuilt.
	Reset bool
}

// Bus delivers published messages to the subscribers of their topic.
type Bus struct {
	db  *db.DB
	log *slog.Logger

	mu   sync.Mutex
	subs map[string]map[*Subscription]struct{}

	listening chan struct{} // closed once LISTEN is in place (at once on SQLite)
	listenOne sync.Once
	stop      context.CancelFunc
	done      chan struct{}
}

// New returns a bus over the database. On PostgreSQL it keeps a dedicated
// connection listening (reconnecting with back-off) until Close.
func New(d *db.DB, log *slog.Logger) *Bus {
	b := &Bus{db: d, log: log, subs: map[string]map[*Subscription]struct{}{}, listening: make(chan struct{}), done: make(chan struct{})}
	if d.Engine() != db.Postgres {
		b.listenOne.Do(func() { close(b.listening) })
		close(b.done)
		b.stop = func() {}
		return b
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.stop = cancel
	go b.listen(ctx)
	return b
}

// Listening waits until notifications from other processes arrive (on
// SQLite at once).
func (b *Bus) Listening(ctx context.Context) error {
	select {
	case <-b.listening:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops listening; subscriptions stay open but receive nothing more.
func (b *Bus) Close() {
	b.stop()
	<-b.done
}

func encode(topic, payload string) (string, error) {
	if topic == "" || strings.ContainsRune(topic, ':') {
		return "", fmt.Errorf("pubsub: bad topic %q", topic)
	}
	msg := topic + ":" + payload
	if len(msg) > MaxPayload {
		return "", fmt.Errorf("pubsub: %s message of %d bytes is over the %d-byte limit", topic, len(msg), MaxPayload)
	}
	return msg, nil
}

// Publish sends a message now.
func (b *Bus) Publish(ctx context.Context, topic, payload string) error {
	msg, err := encode(topic, payload)
	if err != nil {
		return err
	}
	if b.db.Engine() != db.Postgres {
		b.deliver(Message{Topic: topic, Payload: payload})
		return nil
	}
	if _, err := b.db.W.ExecContext(ctx, "SELECT pg_notify($1, $2)", channel, msg); err != nil {
		return fmt.Errorf("pubsub: notify: %w", err)
	}
	return nil
}

// PublishTx sends a message when tx commits, and not at all if it rolls
// back: a subscriber woken by it sees what the transaction wrote.
func (b *Bus) PublishTx(ctx context.Context, tx *db.Tx, topic, payload string) error {
	msg, err := encode(topic, payload)
	if err != nil {
		return err
	}
	if b.db.Engine() != db.Postgres {
		tx.AfterCommit(func() { b.deliver(Message{Topic: topic, Payload: payload}) })
		return nil
	}
	// PostgreSQL queues NOTIFY until commit and drops it on rollback; the
	// call goes with the transaction's next statements.
	tx.Later("SELECT pg_notify($1, $2)", channel, msg)
	return nil
}

// Subscription receives the messages of one topic on C.
type Subscription struct {
	C     <-chan Message
	c     chan Message
	bus   *Bus
	topic string
}

// subscriptionBuffer is how many messages wait for a slow subscriber before
// they are replaced by one Reset.
const subscriptionBuffer = 256

// Subscribe starts receiving the topic's messages.
func (b *Bus) Subscribe(topic string) *Subscription {
	c := make(chan Message, subscriptionBuffer)
	s := &Subscription{C: c, c: c, bus: b, topic: topic}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs[topic] == nil {
		b.subs[topic] = map[*Subscription]struct{}{}
	}
	b.subs[topic][s] = struct{}{}
	return s
}

// Close stops the subscription.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	delete(s.bus.subs[s.topic], s)
}

// deliver hands m to every subscriber of its topic; a subscriber whose
// buffer is full gets its backlog replaced by one Reset.
func (b *Bus) deliver(m Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs[m.Topic] {
		s.offer(m)
	}
}

func (s *Subscription) offer(m Message) {
	select {
	case s.c <- m:
		return
	default:
	}
	for {
		select {
		case <-s.c:
			continue
		default:
		}
		break
	}
	select {
	case s.c <- Message{Topic: s.topic, Reset: true}:
	default:
	}
}

// resetAll tells every subscriber that messages may have been lost.
func (b *Bus) resetAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for topic, subs := range b.subs {
		for s := range subs {
			s.offer(Message{Topic: topic, Reset: true})
		}
	}
}

// listen keeps one connection listening and delivers what arrives.
func (b *Bus) listen(ctx context.Context) {
	defer close(b.done)
	backoff := 100 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		err := b.listenOnce(ctx, func() {
			if !first {
				b.log.Info("pubsub: listening again after a dropped connection")
				// What was published while we were away is lost.
				b.resetAll()
			}
			first = false
			backoff = 100 * time.Millisecond
			b.listenOne.Do(func() { close(b.listening) })
		})
		if ctx.Err() != nil {
			return
		}
		b.log.Warn("pubsub: the listening connection failed; reconnecting", "err", err, "in", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (b *Bus) listenOnce(ctx context.Context, listening func()) error {
	conn, err := pgx.Connect(ctx, b.db.Target.URL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		topic, payload, ok := strings.Cut(n.Payload, ":")
		if !ok {
			continue
		}
		b.deliver(Message{Topic: topic, Payload: payload})
	}
}

// Follow calls forget for every message the subscription gets (another
// replica's change, or a gap in the relay: either way, what was cached may
// be stale) until ctx ends, then closes it. Caches invalidated across
// replicas run it.
func Follow(ctx context.Context, sub *Subscription, forget func()) {
	defer sub.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.C:
			forget()
		}
	}
}
